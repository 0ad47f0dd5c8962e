-- 001_ledger: the double-entry ledger (seed 000 §4, claims PY-07, PY-08, PY-09, PY-14, PY-15, PY-16).
-- The invariants live HERE, in the database, so no code path (a repository bug, a psql session)
-- can break them: balanced per currency at COMMIT, entries append-only, one transaction per
-- idem_key, an entry's currency equal to its account's, no-overdraft balances never negative.

-- Ids are ascending bigints: "transaction 2" in the PY-08 message, and the fixed lock order
-- (ascending account id) that keeps crossed transfers from deadlocking (PY-09).
CREATE TABLE accounts (
  id           int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  currency     char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  -- TigerBeetle's debits_must_not_exceed_credits: posted credits cover posted + pending debits.
  no_overdraft boolean NOT NULL DEFAULT false,
  metadata     jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  -- Target of entries' composite foreign key: an entry cannot carry another currency than its account.
  UNIQUE (id, currency)
);

CREATE TABLE transactions (
  id           int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- PY-08: a second transaction with the same key violates UNIQUE; the key is the caller's retry handle.
  idem_key     text NOT NULL UNIQUE CHECK (length(idem_key) BETWEEN 1 AND 255),
  -- sha256 of the request: a replay with other parameters is refused instead of "succeeding" (Blnk#374).
  fingerprint  text NOT NULL,
  -- Two-phase (TigerBeetle): pending holds funds, then posted or voided, never back.
  status       text NOT NULL CHECK (status IN ('pending', 'posted', 'voided')),
  -- PY-15: a reversal points at what it reverses; the original is never edited or deleted.
  reverses_id  int8 REFERENCES transactions (id),
  metadata     jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  CHECK (reverses_id IS NULL OR status = 'posted')
);
CREATE INDEX transactions_reverses_id ON transactions (reverses_id) WHERE reverses_id IS NOT NULL;

-- Direction + positive amount rather than a signed amount: the CHECK (amount > 0) then rejects a
-- zero or negative leg outright, and an auditor reads D/C exactly as the design text writes it.
CREATE TABLE entries (
  id             int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  transaction_id int8 NOT NULL REFERENCES transactions (id),
  account_id     int8 NOT NULL,
  currency       char(3) NOT NULL,
  direction      char(1) NOT NULL CHECK (direction IN ('D', 'C')),
  amount         int8 NOT NULL CHECK (amount > 0),
  FOREIGN KEY (account_id, currency) REFERENCES accounts (id, currency)
);
CREATE INDEX entries_transaction_id ON entries (transaction_id);
CREATE INDEX entries_account_id_id ON entries (account_id, id);
CREATE INDEX entries_account_id_transaction_id ON entries (account_id, transaction_id);

-- Materialized balances (PY-07): updated by the repository in the same transaction as the entries;
-- the entries stay the truth (the property test recomputes every row from them).
-- Balance convention: credits - debits, so money an account holds is positive.
CREATE TABLE account_balances (
  account_id      int8 PRIMARY KEY REFERENCES accounts (id),
  no_overdraft    boolean NOT NULL,
  posted_debits   int8 NOT NULL DEFAULT 0 CHECK (posted_debits >= 0),
  posted_credits  int8 NOT NULL DEFAULT 0 CHECK (posted_credits >= 0),
  pending_debits  int8 NOT NULL DEFAULT 0 CHECK (pending_debits >= 0),
  pending_credits int8 NOT NULL DEFAULT 0 CHECK (pending_credits >= 0),
  -- Backstop of PY-14: the repository's conditional UPDATE turns this case into a typed error first.
  CONSTRAINT account_balances_no_overdraft
    CHECK (NOT no_overdraft OR posted_credits - posted_debits - pending_debits >= 0)
);

-- PY-08: checked at COMMIT, once every entry of the transaction is in. Per currency: a USD leg
-- cannot balance a BRL leg. Message exactly as the text: "transaction N unbalanced: difference of
-- 100 cents" (debits minus credits, in minor units); the currency goes in DETAIL. One entry alone
-- is always unbalanced (amounts are > 0), so this also enforces "at least 2 entries".
CREATE FUNCTION ledger_check_balanced() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  unbalanced record;
BEGIN
  SELECT e.currency, sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END)::int8 AS diff
    INTO unbalanced
    FROM entries e WHERE e.transaction_id = NEW.transaction_id
    GROUP BY e.currency
    HAVING sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END) <> 0
    ORDER BY e.currency LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % unbalanced: difference of % cents', NEW.transaction_id, unbalanced.diff
      USING ERRCODE = 'check_violation', DETAIL = format('currency %s, in minor units', unbalanced.currency);
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER entries_balanced AFTER INSERT ON entries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_balanced();

-- A transaction row with no entries at all would escape the trigger above; this one catches it.
CREATE FUNCTION ledger_check_has_entries() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM entries e WHERE e.transaction_id = NEW.id) THEN
    RAISE EXCEPTION 'transaction % has 0 entry: double entry needs at least 2', NEW.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER transactions_have_entries AFTER INSERT ON transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_has_entries();

-- PY-07/PY-08: history is never edited; a mistake is corrected by a reversal.
CREATE FUNCTION ledger_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'entries are append-only' USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER entries_append_only BEFORE UPDATE OR DELETE ON entries
  FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
-- TRUNCATE skips row triggers; refuse it too.
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

-- A transaction row changes only by its two-phase step: status pending -> posted | voided.
CREATE FUNCTION ledger_guard_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are append-only' USING ERRCODE = 'restrict_violation';
  END IF;
  IF OLD.status <> 'pending' OR NEW.status NOT IN ('posted', 'voided')
     OR (NEW.id, NEW.idem_key, NEW.fingerprint, NEW.reverses_id, NEW.metadata, NEW.created_at)
        IS DISTINCT FROM (OLD.id, OLD.idem_key, OLD.fingerprint, OLD.reverses_id, OLD.metadata, OLD.created_at)
  THEN
    RAISE EXCEPTION 'transaction % is %: only pending -> posted | voided may change', OLD.id, OLD.status
      USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER transactions_two_phase_only BEFORE UPDATE OR DELETE ON transactions
  FOR EACH ROW EXECUTE FUNCTION ledger_guard_transaction();

-- 015_ledger_group_commit: PY-08's balance check fires once per ledger transaction, not once per
-- entry (seed 000 §4; issue 14). Group commit writes hundreds of transfers per database
-- transaction, and 001's deferred `entries_balanced` queued one trigger event per ENTRY, each
-- re-summing its whole transaction at COMMIT: a two-entry transfer summed itself twice.
--
-- Constraint triggers are only `AFTER … FOR EACH ROW` and cannot read transition tables, so the
-- check stays deferred and row-level, but on the TRANSACTION row (where `transactions_have_entries`
-- already fired once per transaction): at COMMIT it sums the transaction's entries per currency.
--
-- What that alone would miss: entries appended later to a transaction that an EARLIER database
-- transaction created (no transaction row is inserted then, so no check would fire). A
-- statement-level trigger on entries closes it: entries may only join a transaction created in
-- the SAME database transaction, whose own deferred check then runs at COMMIT. "Created in this
-- database transaction" is `created_xid = pg_current_xact_id()`: the top-level xid, the same
-- inside a savepoint; the column cannot be changed afterwards (the guard below compares it), and
-- rows older than this migration have none, so nothing can be appended to them either.
--
-- Invariants unchanged: balanced per currency at COMMIT with PY-08's exact message, at least two
-- entries, append-only, one transaction per idem_key, the no-overdraft CHECK.

ALTER TABLE transactions ADD COLUMN created_xid xid8;
ALTER TABLE transactions ALTER COLUMN created_xid SET DEFAULT pg_current_xact_id();

-- At COMMIT, once per transaction row: at least 2 entries (one entry is always unbalanced, none
-- is caught here), and debits equal credits per currency. Messages exactly as 001's.
CREATE FUNCTION ledger_check_transaction() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  unbalanced record;
BEGIN
  SELECT e.currency, sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END)::int8 AS diff
    INTO unbalanced
    FROM entries e WHERE e.transaction_id = NEW.id
    GROUP BY e.currency
    HAVING sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END) <> 0
    ORDER BY e.currency LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % unbalanced: difference of % cents', NEW.id, unbalanced.diff
      USING ERRCODE = 'check_violation', DETAIL = format('currency %s, in minor units', unbalanced.currency);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM entries e WHERE e.transaction_id = NEW.id) THEN
    RAISE EXCEPTION 'transaction % has 0 entry: double entry needs at least 2', NEW.id
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;

DROP TRIGGER entries_balanced ON entries;
DROP TRIGGER transactions_have_entries ON transactions;
DROP FUNCTION ledger_check_balanced();
DROP FUNCTION ledger_check_has_entries();
CREATE CONSTRAINT TRIGGER transactions_balanced AFTER INSERT ON transactions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_check_transaction();

-- Once per INSERT statement on entries, over its transition table.
CREATE FUNCTION ledger_entries_join_new_transactions() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  v_old int8;
BEGIN
  SELECT t.id INTO v_old
    FROM (SELECT DISTINCT n.transaction_id FROM new_entries n) n
    JOIN transactions t ON t.id = n.transaction_id
   WHERE t.created_xid IS DISTINCT FROM pg_current_xact_id()
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'transaction % was created by an earlier database transaction: entries cannot be added to it', v_old
      USING ERRCODE = 'restrict_violation', HINT = 'write a new transaction (a reversal corrects a mistake)';
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER entries_join_new_transactions AFTER INSERT ON entries
  REFERENCING NEW TABLE AS new_entries
  FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_join_new_transactions();

-- 001's guard, with created_xid among the columns no update may change.
CREATE OR REPLACE FUNCTION ledger_guard_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are append-only' USING ERRCODE = 'restrict_violation';
  END IF;
  IF OLD.status <> 'pending' OR NEW.status NOT IN ('posted', 'voided')
     OR (NEW.id, NEW.idem_key, NEW.fingerprint, NEW.reverses_id, NEW.metadata, NEW.created_at, NEW.created_xid)
        IS DISTINCT FROM (OLD.id, OLD.idem_key, OLD.fingerprint, OLD.reverses_id, OLD.metadata, OLD.created_at, OLD.created_xid)
  THEN
    RAISE EXCEPTION 'transaction % is %: only pending -> posted | voided may change', OLD.id, OLD.status
      USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END $$;

-- 018_ledger_write_serial: ledger_write checks arrival order itself, and answers one short row per
-- transfer (seed 000 §4; issue 14; PY-09, PY-14 unchanged).
--
-- 1. `p_serial`: with it, a no-overdraft account must stay covered after EACH transfer of the call,
--    in arrival order (the running sum of its spendable change: posted credits − posted debits −
--    pending debits), not only after all of them. A group the call accepts is then exactly what
--    applying its transfers one by one would have written, so the group commit can send any group
--    without a chain, a refusal, a timeout or a repeated key as ONE autocommit call. Before, it
--    could only when no account's balance rose after it fell — a batch of 1 000 random pairs over
--    100 000 accounts almost never qualified (≈ 5 such accounts expected) and took the slow path:
--    BEGIN, lock and read 2 000 accounts, decide in Node while holding the locks, write, COMMIT —
--    16 such batches queued on each other's locks (p99 5.8 s). Without `p_serial` (an atomic
--    batch, the saga's own writes) the check stays on the call's net effect, as in 007.
-- 2. The answer: one row per transfer (its ordinal, transaction id, replayed or not, its entry ids;
--    the transaction's `created_at` once, on the first created row) instead of one row per entry
--    with every column — the caller already holds what it sent. What a replay stored is read by
--    the caller (replays are rare). The rows come from the inserts' own RETURNING, so the call no
--    longer reads back every key, transaction and entry it has just written, and the replay
--    check runs only when some key was not created.
-- Everything else as 007: the lock in ascending account id, inserts in ascending key, PY-14's
-- conditional UPDATE, the SQLSTATEs LDA01 / LDA02 / LDI01 / LDF01.
DROP FUNCTION ledger_write(text[], text[], boolean[], int8[], jsonb[], int4[], int8[], text[], text[], int8[]);

CREATE FUNCTION ledger_write(
  p_keys text[], p_fingerprints text[], p_pending boolean[], p_reverses int8[], p_metadata jsonb[],
  p_entry_transfer int4[], p_entry_account int8[], p_entry_currency text[], p_entry_direction text[], p_entry_amount int8[],
  p_serial boolean
) RETURNS TABLE (ord int4, transaction_id int8, replayed boolean, created_at timestamptz, entry_ids text)
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
DECLARE
  v_ids int8[];
  v_currencies text[];
  v_bad record;
  v_short int8[];
  v_ords int4[];
  v_created int8[];
  v_entry_ids text[];
  v_created_at timestamptz;
  v_replayed_ords int4[];
  v_replayed int8[];
BEGIN
  -- 1. PY-09: lock the balance rows in ascending account id, reading each account's currency.
  SELECT array_agg(l.account_id), array_agg(l.currency) INTO v_ids, v_currencies
    FROM (SELECT b.account_id, a.currency::text AS currency
            FROM account_balances b JOIN accounts a ON a.id = b.account_id
           WHERE b.account_id = ANY (p_entry_account) ORDER BY b.account_id FOR UPDATE OF b) l;
  SELECT e.a, e.c, k.c AS account_currency INTO v_bad
    FROM unnest(p_entry_account, p_entry_currency) e(a, c)
    LEFT JOIN unnest(v_ids, v_currencies) k(a, c) ON k.a = e.a
   WHERE k.a IS NULL OR k.c <> e.c LIMIT 1;
  IF FOUND THEN
    IF v_bad.account_currency IS NULL THEN
      RAISE EXCEPTION 'account % not found', v_bad.a USING ERRCODE = 'LDA01', DETAIL = v_bad.a::text;
    END IF;
    RAISE EXCEPTION 'account % holds %, not %', v_bad.a, v_bad.account_currency, v_bad.c
      USING ERRCODE = 'LDA02', DETAIL = json_build_object('accountId', v_bad.a::text, 'accountCurrency', v_bad.account_currency, 'entryCurrency', v_bad.c)::text;
  END IF;
  -- 2..4 in one statement: the new transactions (in ascending key, the lock order on the unique
  -- index), their entries, and the balance deltas through PY-14's conditional UPDATE: a
  -- no-overdraft row it would take below zero — at the end, or with p_serial after any transfer
  -- in arrival order — is not updated, and is reported below.
  WITH u AS (
    SELECT * FROM unnest(p_keys, p_fingerprints, p_pending, p_reverses, p_metadata) WITH ORDINALITY u(k, f, p, r, m, n)
  ), ins AS (
    INSERT INTO transactions AS t (idem_key, fingerprint, status, reverses_id, metadata)
    SELECT u.k, u.f, CASE WHEN u.p THEN 'pending' ELSE 'posted' END, u.r, u.m FROM u ORDER BY u.k
    ON CONFLICT (idem_key) DO NOTHING
    RETURNING t.id, t.idem_key, t.created_at
  ), created AS (
    SELECT u.n::int4 AS n, u.p, ins.id, ins.created_at FROM ins JOIN u ON u.k = ins.idem_key
  ), e AS (
    SELECT c.id, c.n, c.p, e.a, e.c, e.d, e.x, e.i
      FROM unnest(p_entry_transfer, p_entry_account, p_entry_currency, p_entry_direction, p_entry_amount)
           WITH ORDINALITY e(t, a, c, d, x, i) JOIN created c ON c.n = e.t
  ), ent AS (
    INSERT INTO entries AS x (transaction_id, account_id, currency, direction, amount)
    SELECT e.id, e.a, e.c, e.d, e.x FROM e ORDER BY e.i
    RETURNING x.id, x.transaction_id
  ), legs AS (
    -- Each transfer's net change per account.
    SELECT e.a, e.n,
           sum(CASE WHEN e.d = 'D' AND NOT e.p THEN e.x ELSE 0 END) AS pd,
           sum(CASE WHEN e.d = 'C' AND NOT e.p THEN e.x ELSE 0 END) AS pc,
           sum(CASE WHEN e.d = 'D' AND e.p THEN e.x ELSE 0 END) AS qd,
           sum(CASE WHEN e.d = 'C' AND e.p THEN e.x ELSE 0 END) AS qc
      FROM e GROUP BY e.a, e.n
  ), d AS (
    -- Per account: the call's total, and the lowest its spendable change reaches in arrival order.
    SELECT r.a, sum(r.pd) AS pd, sum(r.pc) AS pc, sum(r.qd) AS qd, sum(r.qc) AS qc, min(r.running) AS lowest
      FROM (SELECT legs.*, sum(legs.pc - legs.pd - legs.qd) OVER (PARTITION BY legs.a ORDER BY legs.n) AS running
              FROM legs) r
     GROUP BY r.a
  ), upd AS (
    UPDATE account_balances b
       SET posted_debits = b.posted_debits + d.pd, posted_credits = b.posted_credits + d.pc,
           pending_debits = b.pending_debits + d.qd, pending_credits = b.pending_credits + d.qc
      FROM d WHERE b.account_id = d.a
       AND (NOT b.no_overdraft
            OR b.posted_credits - b.posted_debits - b.pending_debits
               + CASE WHEN p_serial THEN d.lowest ELSE d.pc - d.pd - d.qd END >= 0)
    RETURNING b.account_id
  ), per AS (
    SELECT c.n, c.id, c.created_at, string_agg(ent.id::text, ',' ORDER BY ent.id) AS ids
      FROM created c JOIN ent ON ent.transaction_id = c.id
     GROUP BY c.n, c.id, c.created_at
  )
  SELECT (SELECT array_agg(per.n ORDER BY per.n) FROM per),
         (SELECT array_agg(per.id ORDER BY per.n) FROM per),
         (SELECT array_agg(per.ids ORDER BY per.n) FROM per),
         (SELECT min(per.created_at) FROM per),
         (SELECT array_agg(d.a ORDER BY d.a) FROM d LEFT JOIN upd ON upd.account_id = d.a WHERE upd.account_id IS NULL)
    INTO v_ords, v_created, v_entry_ids, v_created_at, v_short;
  IF v_short IS NOT NULL THEN
    RAISE EXCEPTION 'insufficient funds on accounts %', v_short USING ERRCODE = 'LDF01', DETAIL = array_to_string(v_short, ',');
  END IF;
  IF coalesce(array_length(v_ords, 1), 0) < array_length(p_keys, 1) THEN
    -- A key that already existed is a replay only with the same request fingerprint (Blnk#374).
    SELECT t.id, t.idem_key INTO v_bad
      FROM unnest(p_keys, p_fingerprints) WITH ORDINALITY u(k, f, n) JOIN transactions t ON t.idem_key = u.k
     WHERE u.n <> ALL (coalesce(v_ords, '{}')) AND t.fingerprint <> u.f
     ORDER BY u.n LIMIT 1;
    IF FOUND THEN
      RAISE EXCEPTION 'idempotency key % was used with other parameters', v_bad.idem_key
        USING ERRCODE = 'LDI01', DETAIL = json_build_object('idemKey', v_bad.idem_key, 'transactionId', v_bad.id::text)::text;
    END IF;
    SELECT array_agg(u.n::int4), array_agg(t.id) INTO v_replayed_ords, v_replayed
      FROM unnest(p_keys) WITH ORDINALITY u(k, n) JOIN transactions t ON t.idem_key = u.k
     WHERE u.n <> ALL (coalesce(v_ords, '{}'));
  END IF;
  RETURN QUERY
    SELECT c.n, c.id, false, CASE WHEN c.k = 1 THEN v_created_at END, c.ids
      FROM unnest(v_ords, v_created, v_entry_ids) WITH ORDINALITY c(n, id, ids, k)
    UNION ALL
    SELECT r.n, r.id, true, NULL::timestamptz, NULL::text
      FROM unnest(v_replayed_ords, v_replayed) r(n, id);
END $$;

-- 3. PY-08's deferred check (015) in ONE query per ledger transaction instead of two: the
-- per-currency sums, an unbalanced currency first (alphabetically, as before); no row at all is
-- a transaction without entries. Messages and SQLSTATEs exactly as 015's.
CREATE OR REPLACE FUNCTION ledger_check_transaction() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  worst record;
BEGIN
  SELECT e.currency, sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END)::int8 AS diff
    INTO worst
    FROM entries e WHERE e.transaction_id = NEW.id
    GROUP BY e.currency
    ORDER BY sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END) = 0, e.currency
    LIMIT 1;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'transaction % has 0 entry: double entry needs at least 2', NEW.id
      USING ERRCODE = 'check_violation';
  END IF;
  IF worst.diff <> 0 THEN
    RAISE EXCEPTION 'transaction % unbalanced: difference of % cents', NEW.id, worst.diff
      USING ERRCODE = 'check_violation', DETAIL = format('currency %s, in minor units', worst.currency);
  END IF;
  RETURN NULL;
END $$;

-- 019_ledger_late_entries: an entry inserted after its ledger transaction's balance check already
-- ran is checked again at COMMIT (seed 000 §4, PY-08).
--
-- 015 checks each ledger transaction once, deferred to COMMIT, from its transaction row. But
-- `SET CONSTRAINTS ALL IMMEDIATE` (any session may send it) fires that check at once, and an entry
-- inserted afterwards into the same, still open, ledger transaction queued no new check: a psql
-- session could commit 5 against 105 (found while measuring issue 14's write path; 001's per-entry
-- check did not have the hole, 015 opened it). Now every run of the check marks the database
-- transaction (a transaction-local setting, `ledger.checked`), and an entry inserted once the mark
-- is set queues its own deferred check of its ledger transaction. The WHEN is evaluated as the row
-- is inserted: in the normal flow — checks run only at COMMIT, after every insert — it is false
-- for every entry and queues nothing, so the once-per-transaction cost of 015 stays.
CREATE OR REPLACE FUNCTION ledger_check_transaction() RETURNS trigger LANGUAGE plpgsql
SET search_path FROM CURRENT AS $$
DECLARE
  v_id int8;
  worst record;
BEGIN
  IF TG_TABLE_NAME = 'entries' THEN
    v_id := NEW.transaction_id;
  ELSE
    v_id := NEW.id;
  END IF;
  IF current_setting('ledger.checked', true) IS DISTINCT FROM 'on' THEN
    PERFORM set_config('ledger.checked', 'on', true);
  END IF;
  SELECT e.currency, sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END)::int8 AS diff
    INTO worst
    FROM entries e WHERE e.transaction_id = v_id
    GROUP BY e.currency
    ORDER BY sum(CASE e.direction WHEN 'D' THEN e.amount ELSE -e.amount END) = 0, e.currency
    LIMIT 1;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'transaction % has 0 entry: double entry needs at least 2', v_id
      USING ERRCODE = 'check_violation';
  END IF;
  IF worst.diff <> 0 THEN
    RAISE EXCEPTION 'transaction % unbalanced: difference of % cents', v_id, worst.diff
      USING ERRCODE = 'check_violation', DETAIL = format('currency %s, in minor units', worst.currency);
  END IF;
  RETURN NULL;
END $$;

CREATE CONSTRAINT TRIGGER entries_balanced_late AFTER INSERT ON entries
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  WHEN (current_setting('ledger.checked', true) = 'on')
  EXECUTE FUNCTION ledger_check_transaction();

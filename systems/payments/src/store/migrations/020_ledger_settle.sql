-- 020_ledger_settle: posting or voiding a pending transfer in ONE call (issue 14; PY-09, PY-14,
-- PY-16 unchanged). settlePending used to send six statements: lock the transaction row, read it,
-- read its entries, lock its accounts, apply the deltas, set the status. The saga posts or voids
-- every payment's hold, and from the account lock to COMMIT the merchant's balance rows — which
-- every payment of the merchant needs — were held across three round trips. Here the same steps
-- run in the server, in the same order, so they are held for this call's answer and the COMMIT.
--
-- The one lock order every writer follows: the transaction row first (FOR NO KEY UPDATE), then
-- its accounts in ascending id (the LockRows node above the Sort). Nothing changes unless the row
-- is pending and — for a post — not past its deadline (016); the caller reads the prior status
-- and the deadline from the answer and raises the ledger's own errors. PY-14's conditional UPDATE
-- as everywhere (a post or a void only ever lowers pending debits, so it cannot trip it; the
-- check stays so the rule has no exception): LDF01 names the accounts it would take below zero.
CREATE FUNCTION ledger_settle(p_id int8, p_outcome text)
RETURNS TABLE (prior_status text, expires_at timestamptz, expired boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_status text;
  v_expires_at timestamptz;
  v_expired boolean;
  v_post int8 := CASE p_outcome WHEN 'posted' THEN 1 WHEN 'voided' THEN 0 END;
  v_short int8[];
BEGIN
  IF v_post IS NULL THEN
    RAISE EXCEPTION 'outcome must be posted or voided, not %', p_outcome USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT t.status, t.expires_at, coalesce(t.expires_at <= now(), false)
    INTO v_status, v_expires_at, v_expired
    FROM transactions t WHERE t.id = p_id FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  IF v_status = 'pending' AND NOT (v_post = 1 AND v_expired) THEN
    PERFORM 1 FROM account_balances b
      WHERE b.account_id IN (SELECT e.account_id FROM entries e WHERE e.transaction_id = p_id)
      ORDER BY b.account_id FOR UPDATE;
    WITH legs AS (
      SELECT e.account_id AS a,
             sum(CASE e.direction WHEN 'D' THEN e.amount ELSE 0 END) AS d,
             sum(CASE e.direction WHEN 'C' THEN e.amount ELSE 0 END) AS c
        FROM entries e WHERE e.transaction_id = p_id GROUP BY e.account_id
    ), upd AS (
      UPDATE account_balances b
         SET posted_debits = b.posted_debits + legs.d * v_post, posted_credits = b.posted_credits + legs.c * v_post,
             pending_debits = b.pending_debits - legs.d, pending_credits = b.pending_credits - legs.c
        FROM legs WHERE b.account_id = legs.a
         AND (NOT b.no_overdraft
              OR (b.posted_credits + legs.c * v_post) - (b.posted_debits + legs.d * v_post) - (b.pending_debits - legs.d) >= 0)
      RETURNING b.account_id
    )
    SELECT array_agg(legs.a ORDER BY legs.a) INTO v_short
      FROM legs LEFT JOIN upd ON upd.account_id = legs.a WHERE upd.account_id IS NULL;
    IF v_short IS NOT NULL THEN
      RAISE EXCEPTION 'insufficient funds on accounts %', v_short USING ERRCODE = 'LDF01', DETAIL = array_to_string(v_short, ',');
    END IF;
    UPDATE transactions SET status = p_outcome WHERE id = p_id;
  END IF;
  RETURN QUERY SELECT v_status, v_expires_at, v_expired;
END $$;

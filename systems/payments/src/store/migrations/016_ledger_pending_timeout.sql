-- 016_ledger_pending_timeout: a pending transfer (a two-phase hold) may carry a timeout, as
-- TigerBeetle's pending transfers do (issue 14): once `expires_at` passes, the hold can no longer
-- be posted, and the expirer voids it (releasing its pending amounts). Blnk's inflight expiry is
-- the same idea.
--
-- `timeout_s` is what the request asked (part of its fingerprint, so a retry with another timeout
-- is refused), `expires_at` the database's clock at creation plus that. Both are set once, by the
-- database transaction that created the row (`created_xid`, 015): ledger_write inserts the row,
-- and the same transaction sets the deadline; afterwards they are as immutable as the rest.

ALTER TABLE transactions ADD COLUMN timeout_s int4, ADD COLUMN expires_at timestamptz;
ALTER TABLE transactions ADD CONSTRAINT transactions_timeout_pending
  CHECK ((timeout_s IS NULL) = (expires_at IS NULL) AND (timeout_s IS NULL OR timeout_s > 0));

-- The expirer's scan: holds still pending that have a deadline, soonest first. Rows leave the
-- index when posted or voided.
CREATE INDEX transactions_pending_expiry ON transactions (expires_at)
  WHERE status = 'pending' AND expires_at IS NOT NULL;

-- 015's guard, with the deadline among the columns no later update may change. The one other
-- update allowed: the creating database transaction sets the deadline of its own pending row,
-- once (NULL -> a value), nothing else changing.
CREATE OR REPLACE FUNCTION ledger_guard_transaction() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'transactions are append-only' USING ERRCODE = 'restrict_violation';
  END IF;
  IF OLD.status = 'pending' AND NEW.status = 'pending' AND OLD.expires_at IS NULL AND OLD.timeout_s IS NULL
     AND OLD.created_xid = pg_current_xact_id()
     AND (NEW.id, NEW.idem_key, NEW.fingerprint, NEW.reverses_id, NEW.metadata, NEW.created_at, NEW.created_xid)
         IS NOT DISTINCT FROM (OLD.id, OLD.idem_key, OLD.fingerprint, OLD.reverses_id, OLD.metadata, OLD.created_at, OLD.created_xid)
  THEN
    RETURN NEW;
  END IF;
  IF OLD.status <> 'pending' OR NEW.status NOT IN ('posted', 'voided')
     OR (NEW.id, NEW.idem_key, NEW.fingerprint, NEW.reverses_id, NEW.metadata, NEW.created_at, NEW.created_xid,
         NEW.timeout_s, NEW.expires_at)
        IS DISTINCT FROM (OLD.id, OLD.idem_key, OLD.fingerprint, OLD.reverses_id, OLD.metadata, OLD.created_at, OLD.created_xid,
                          OLD.timeout_s, OLD.expires_at)
  THEN
    RAISE EXCEPTION 'transaction % is %: only pending -> posted | voided may change', OLD.id, OLD.status
      USING ERRCODE = 'restrict_violation';
  END IF;
  RETURN NEW;
END $$;

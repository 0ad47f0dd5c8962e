-- 009_lease_vocabulary: sagas and refunds in the one lease vocabulary of infra's leased claim
-- queue (packages/infra/src/sql/lease-queue.ts), which webhooks' deliveries already speak:
-- lease_until → lease_expires_at, version → lease_version, next_run_at → next_attempt_at.
-- Renames only: no row is rewritten, the indexes (payments_due, payment_refunds_due) and the
-- CHECKs follow their columns. The lease CHECK, auto-named when 003 created it, gets the name
-- webhooks gives its own (`<table>_lease_whole`); on engines that name NOT NULL constraints
-- (PostgreSQL 18), those follow the new column names too.

ALTER TABLE payments RENAME COLUMN lease_until TO lease_expires_at;
ALTER TABLE payments RENAME COLUMN version TO lease_version;
ALTER TABLE payments RENAME COLUMN next_run_at TO next_attempt_at;
ALTER TABLE payment_refunds RENAME COLUMN lease_until TO lease_expires_at;
ALTER TABLE payment_refunds RENAME COLUMN version TO lease_version;
ALTER TABLE payment_refunds RENAME COLUMN next_run_at TO next_attempt_at;

DO $$
DECLARE
  t text;
  c record;
BEGIN
  FOREACH t IN ARRAY ARRAY['payments', 'payment_refunds'] LOOP
    -- The one CHECK pairing owner and expiry, found by what it says, not by its generated name.
    FOR c IN SELECT conname FROM pg_constraint
              WHERE conrelid = t::regclass AND contype = 'c'
                AND pg_get_constraintdef(oid) = 'CHECK (((lease_owner IS NULL) = (lease_expires_at IS NULL)))' LOOP
      EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', t, c.conname, t || '_lease_whole');
    END LOOP;
    FOR c IN SELECT * FROM (VALUES ('version', 'lease_version'), ('next_run_at', 'next_attempt_at')) AS r(old, new) LOOP
      IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = t::regclass AND conname = t || '_' || c.old || '_not_null') THEN
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', t, t || '_' || c.old || '_not_null',
                       t || '_' || c.new || '_not_null');
      END IF;
    END LOOP;
  END LOOP;
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'payments'::regclass AND conname = 'payments_lease_whole')
     OR NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = 'payment_refunds'::regclass
                       AND conname = 'payment_refunds_lease_whole') THEN
    RAISE EXCEPTION '009_lease_vocabulary: the lease CHECK of payments or payment_refunds was not found';
  END IF;
END $$;

-- The durable charge queue (FS-15/18): one row per paid-for hold, written in the same statement
-- that moves the hold to charging, drained by the charge worker at a configured rate through
-- payments' public API with the hold id as the Idempotency-Key. Rows are leased with infra's
-- LeaseQueue vocabulary, so a worker killed mid-charge hands its row to another within the lease.

CREATE TABLE charges (
  hold_id          text PRIMARY KEY REFERENCES holds (id),
  sale_id          text NOT NULL,
  -- FIFO within the queue: claims take the lowest seq that is due.
  seq              bigserial NOT NULL,
  amount_minor     int8 NOT NULL CHECK (amount_minor > 0),
  currency         text NOT NULL,
  -- charge: call payments; record: approved, write the order; refund: compensate (FS-18); done.
  step             text NOT NULL CHECK (step IN ('charge', 'record', 'refund', 'done')),
  outcome          text CHECK (outcome IN ('paid', 'declined', 'compensated')),
  payment_id       text,
  attempts         int4 NOT NULL DEFAULT 0,
  last_error       text,
  enqueued_at      timestamptz NOT NULL,
  finished_at      timestamptz,
  lease_owner      text,
  lease_expires_at timestamptz,
  lease_version    int8 NOT NULL DEFAULT 0,
  next_attempt_at  timestamptz NOT NULL
);
CREATE INDEX charges_due ON charges (seq) WHERE step <> 'done';

-- The outbox takes the one lease vocabulary of infra's lease queue and the outbox's one
-- failure policy (@casebook/infra/sql/outbox): lease_until → lease_expires_at, the fencing
-- token lease_token → lease_version (values carry over: a row leased by a relay of the previous
-- version stays leased until its lease ends); `attempts` counts a row's consecutive failed
-- publishes (the retry delay's exponent; publish_count still counts every publish, re-publishes
-- included), `parked_at` is set when a row is parked. This system's relays never park
-- (maxAttempts Infinity: the fan-out is local and nobody would resume a row), the column is the
-- shared schema's. The due index leaves parked rows out.
ALTER TABLE outbox RENAME COLUMN lease_until TO lease_expires_at;
ALTER TABLE outbox RENAME COLUMN lease_token TO lease_version;
ALTER TABLE outbox ADD COLUMN attempts int4 NOT NULL DEFAULT 0 CHECK (attempts >= 0);
ALTER TABLE outbox ADD COLUMN parked_at timestamptz;
DROP INDEX outbox_due;
CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE published_at IS NULL AND parked_at IS NULL;

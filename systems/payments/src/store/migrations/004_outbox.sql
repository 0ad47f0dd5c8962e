-- Transactional outbox (PY-11): events written in the SAME transaction as the business
-- change that caused them, published afterwards by the relay, in order per ordering key
-- (the account) and in parallel across keys — SQS FIFO's MessageGroupId, in PostgreSQL.
-- Times come from the service's clock (epoch ms turned into timestamptz by the store).

-- One row per ordering key: the key's sequence counter and the relay's claim on it.
-- enqueue() bumps last_seq with an upsert, so its row lock serialises the transactions
-- that enqueue for one key: per-key seq order IS commit order.
CREATE TABLE outbox_streams (
  ordering_key    text        PRIMARY KEY CHECK (char_length(ordering_key) BETWEEN 1 AND 255),
  last_seq        int8        NOT NULL CHECK (last_seq >= 1),
  -- Highest seq the relay published; every seq at or below it is done.
  published_seq   int8        NOT NULL DEFAULT 0 CHECK (published_seq BETWEEN 0 AND last_seq),
  -- The relay's claim: at most one relay publishes a key at a time (one in flight per key).
  lease_owner     text,
  lease_until     timestamptz,
  -- Fencing token: bumped on every claim, checked by every write of the claimant, so a
  -- relay whose lease expired cannot mark anything after another relay took the key.
  lease_token     int8        NOT NULL DEFAULT 0,
  -- Retry state of the head event: consecutive failures and when to try again.
  attempts        int4        NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_attempt_at timestamptz NOT NULL,
  last_error      text,
  -- Set when the head event failed maxAttempts times: the key stops (order forbids
  -- skipping its head) until an operator resumes it.
  parked_at       timestamptz,
  CONSTRAINT outbox_streams_lease_whole CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);

-- What the relay scans: keys with unpublished events, due first.
CREATE INDEX outbox_streams_due ON outbox_streams (next_attempt_at)
  WHERE published_seq < last_seq AND parked_at IS NULL;

CREATE TABLE outbox_events (
  ordering_key text        NOT NULL REFERENCES outbox_streams (ordering_key),
  seq          int8        NOT NULL CHECK (seq >= 1),
  -- Stable id, sent with every (re)publication, so consumers dedupe at-least-once delivery.
  event_id     text        NOT NULL UNIQUE CHECK (char_length(event_id) BETWEEN 1 AND 255),
  type         text        NOT NULL CHECK (char_length(type) BETWEEN 1 AND 100),
  payload      jsonb       NOT NULL,
  created_at   timestamptz NOT NULL,
  published_at timestamptz,
  PRIMARY KEY (ordering_key, seq)
);

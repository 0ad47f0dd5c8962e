-- 003_events: events (the producer's confirmed facts) and the transactional outbox (WH-07).

CREATE TABLE events (
  -- Stable id, sent as `webhook-id` on every attempt and replay, so receivers dedupe (WH-14).
  id                 text        PRIMARY KEY CHECK (id ~ '^msg_[0-9a-f]{32}$'),
  -- Creation order, for per-key ordering (WH-03). Handed out before commit, so two events
  -- created concurrently have no meaningful order between them.
  seq                int8        GENERATED ALWAYS AS IDENTITY UNIQUE,
  tenant_id          text        NOT NULL REFERENCES tenants (id),
  type               text        NOT NULL CHECK (char_length(type) BETWEEN 1 AND 100),
  -- NULL once retention deleted it (WH-22); hash and size stay for idempotency and metrics.
  payload            jsonb,
  payload_hash       char(64)    NOT NULL,
  payload_bytes      int4        NOT NULL CHECK (payload_bytes >= 2),
  payload_expires_at timestamptz NOT NULL,
  idempotency_key    text        CHECK (idempotency_key IS NULL OR char_length(idempotency_key) BETWEEN 1 AND 255),
  created_at         timestamptz NOT NULL,
  -- One event per (tenant, key): a retried ingest returns the first event. NULL keys never collide.
  CONSTRAINT events_tenant_idempotency_key UNIQUE (tenant_id, idempotency_key),
  CONSTRAINT events_tenant_id_key UNIQUE (tenant_id, id)
);
-- The retention sweeper's scan: payloads still present, oldest expiry first.
CREATE INDEX events_payload_expiry ON events (payload_expires_at) WHERE payload IS NOT NULL;

-- One row per event, written in the producer's transaction: the event is published iff
-- that transaction committed. The relay claims rows with a lease (a fencing token guards
-- its marks); a relay that dies after publishing and before marking leaves the row to be
-- published again — harmless, fan-out is idempotent (WH-09, WH-14).
CREATE TABLE outbox (
  id              int8        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id        text        NOT NULL UNIQUE REFERENCES events (id),
  tenant_id       text        NOT NULL,
  created_at      timestamptz NOT NULL,
  -- When the row is due: now for a new row, the lease's end while claimed, the retry time
  -- after a failed publish — one column, so "claimable" is one index range.
  next_attempt_at timestamptz NOT NULL,
  lease_owner     text,
  lease_until     timestamptz,
  lease_token     int8        NOT NULL DEFAULT 0,
  publish_count   int4        NOT NULL DEFAULT 0 CHECK (publish_count >= 0),
  last_error      text        CHECK (last_error IS NULL OR char_length(last_error) <= 1000),
  published_at    timestamptz,
  CONSTRAINT outbox_lease_whole CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);
CREATE INDEX outbox_due ON outbox (next_attempt_at, id) WHERE published_at IS NULL;
CREATE INDEX outbox_published ON outbox (published_at) WHERE published_at IS NOT NULL;

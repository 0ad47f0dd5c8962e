-- The outbox of channel events (CH-20): a channel message's row and its event row are written
-- in ONE transaction, so its ONE stream event is published at least once even when the send
-- service dies, or the stream stays down, before its publish (store/channel-event-outbox.ts).
-- infra's UnorderedOutbox columns (packages/infra/src/sql/outbox-ddl.ts), plus the message's key.
CREATE TABLE channel_events (
  id               int8        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id         text        NOT NULL UNIQUE CHECK (char_length(event_id) BETWEEN 1 AND 255),
  chat_id          int8        NOT NULL,
  message_id       int8        NOT NULL,
  created_at       timestamptz NOT NULL,
  next_attempt_at  timestamptz NOT NULL,
  lease_owner      text,
  lease_expires_at timestamptz,
  lease_version    int8        NOT NULL DEFAULT 0,
  publish_count    int4        NOT NULL DEFAULT 0 CHECK (publish_count >= 0),
  attempts         int4        NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error       text        CHECK (last_error IS NULL OR char_length(last_error) <= 1000),
  published_at     timestamptz,
  parked_at        timestamptz,
  CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL))
);
CREATE INDEX channel_events_due ON channel_events (next_attempt_at, id)
  WHERE published_at IS NULL AND parked_at IS NULL;

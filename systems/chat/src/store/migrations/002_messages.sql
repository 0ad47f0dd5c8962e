-- The history is the queue (CH-05, CH-19): one row per message, written once, before any
-- delivery (CH-03). `id` is a Snowflake (kit, 41/10/12 bits): the message's identity, what
-- clients deduplicate by (CH-10). `seq` is its position in the conversation, what readers
-- resume after: in a direct or group chat the counter value taken in the same transaction
-- (CH-06); in a channel a commit offset stamped after the row committed (CH-08), NULL until
-- then. History reads are range queries on (chat_id, seq).
CREATE TABLE messages (
  chat_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  id bigint NOT NULL,
  seq bigint CHECK (seq > 0),
  client_msg_id uuid NOT NULL,
  sender_id text NOT NULL,
  sender_device text NOT NULL,
  body text NOT NULL,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (chat_id, id),
  -- CH-09: the conditional write. A resend with the same client_msg_id finds this row.
  CONSTRAINT messages_client_msg_id UNIQUE (chat_id, client_msg_id)
);

CREATE UNIQUE INDEX messages_by_seq ON messages (chat_id, seq);
-- What the channel stamper still has to number (a crash between insert and stamp leaves rows here).
CREATE INDEX messages_unstamped ON messages (chat_id, id) WHERE seq IS NULL;

-- Per (user, device, chat) pointers (CH-05, CH-25): how far each device got. `delivered_seq`
-- moves when the device acks receipt, `read_seq` when its screen showed the messages
-- (CH-11); both only move forward. One history, one row per reader device: no per-user queue.
CREATE TABLE pointers (
  chat_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  user_id text NOT NULL,
  device_id text NOT NULL,
  delivered_seq bigint NOT NULL DEFAULT 0 CHECK (delivered_seq >= 0),
  read_seq bigint NOT NULL DEFAULT 0 CHECK (read_seq >= 0),
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (chat_id, user_id, device_id)
);

-- The message's status in the history (CH-11): first delivered to / read by a device of
-- someone other than its sender.
ALTER TABLE messages ADD COLUMN delivered_at timestamptz, ADD COLUMN read_at timestamptz;

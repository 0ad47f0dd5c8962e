-- Push tokens per device (CH-18, CH-22): where to wake a device that has no live socket.
-- A token the provider reports gone (410 Unregistered) is deleted.
CREATE TABLE push_tokens (
  user_id text NOT NULL,
  device_id text NOT NULL,
  platform text NOT NULL CHECK (platform IN ('apns', 'fcm')),
  token text NOT NULL,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, device_id)
);

CREATE INDEX push_tokens_by_token ON push_tokens (token);

-- Conversations and their members (CH-01, CH-24). `last_seq` is the per-conversation
-- counter of CH-06: the send transaction increments it and the new value is the message's
-- seq. In a channel (CH-07/CH-08) it is the last commit offset handed out by the stamper.
CREATE TABLE conversations (
  id bigint PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('direct', 'group', 'channel')),
  title text,
  -- 'a|b' (sorted user ids) for a direct chat: one direct conversation per pair.
  direct_key text UNIQUE,
  created_by text NOT NULL,
  created_at timestamptz NOT NULL,
  last_seq bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
  last_message_at timestamptz,
  member_count integer NOT NULL DEFAULT 0 CHECK (member_count >= 0)
);

CREATE TABLE members (
  chat_id bigint NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  user_id text NOT NULL,
  joined_at timestamptz NOT NULL,
  PRIMARY KEY (chat_id, user_id)
);

-- The conversation list of a user (ordered by last message through the join).
CREATE INDEX members_by_user ON members (user_id, chat_id);

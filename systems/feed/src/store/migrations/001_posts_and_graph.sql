-- feed's durable truth (FD-09): accounts, posts keyed by (author, Snowflake id), the follow
-- graph indexed by (followee, follower), mutes and blocks, and the fan-out queue (an
-- unordered outbox on infra's lease queue) written in the post's own transaction.

CREATE TABLE accounts (
  id             int8        PRIMARY KEY CHECK (id > 0),
  follower_count int4        NOT NULL DEFAULT 0 CHECK (follower_count >= 0),
  -- Last feed open (written at most once an hour per account): the middle tier pushes
  -- only to followers active in the last FEED_ACTIVE_DAYS.
  last_active_at timestamptz
);

CREATE TABLE posts (
  author_id  int8        NOT NULL REFERENCES accounts (id),
  id         int8        NOT NULL UNIQUE,
  kind       text        NOT NULL CHECK (kind IN ('post', 'repost')),
  body       text        CHECK (body IS NULL OR char_length(body) <= 500),
  repost_of  int8,
  created_at timestamptz NOT NULL,
  edited_at  timestamptz,
  deleted_at timestamptz,
  -- FD-13: partition = author, sort = post id; an author's recent posts are one index range.
  PRIMARY KEY (author_id, id),
  CHECK ((kind = 'repost') = (repost_of IS NOT NULL)),
  CHECK (kind = 'repost' OR body IS NOT NULL)
);

CREATE TABLE follows (
  followee_id int8        NOT NULL REFERENCES accounts (id),
  follower_id int8        NOT NULL REFERENCES accounts (id),
  created_at  timestamptz NOT NULL,
  -- FD-16: the fan-out reads "followers of X" as one index range, in pages.
  PRIMARY KEY (followee_id, follower_id),
  CHECK (followee_id <> follower_id)
);
-- The read side: "whom does X follow" (celebrities to pull, rebuilds).
CREATE INDEX follows_by_follower ON follows (follower_id, followee_id);

CREATE TABLE hidden_authors (
  user_id    int8 NOT NULL REFERENCES accounts (id),
  target_id  int8 NOT NULL REFERENCES accounts (id),
  kind       text NOT NULL CHECK (kind IN ('mute', 'block')),
  PRIMARY KEY (user_id, target_id),
  CHECK (user_id <> target_id)
);

-- The queue between a write and its fan-out: one row per event, leased by a fan-out worker.
CREATE TABLE fanout_events (
  id               int8        GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id         text        NOT NULL UNIQUE CHECK (char_length(event_id) BETWEEN 1 AND 255),
  kind             text        NOT NULL CHECK (kind IN ('post', 'follow', 'unfollow')),
  actor_id         int8        NOT NULL,
  target_id        int8        NOT NULL,
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
CREATE INDEX fanout_events_due ON fanout_events (next_attempt_at, id)
  WHERE published_at IS NULL AND parked_at IS NULL;

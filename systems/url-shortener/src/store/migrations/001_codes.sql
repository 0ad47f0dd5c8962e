-- 001_codes: what the counter scheme keeps (US-05, US-06).

-- The shared counter: one row per sequence, changed only by one atomic add of a block
-- (`UPDATE … SET value = value + 1000 RETURNING value`): the row lock serialises the adds,
-- so every add returns a distinct end and blocks never overlap.
CREATE TABLE code_counters (
  name  text   PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,31}$'),
  value bigint NOT NULL CHECK (value >= 0)
);
INSERT INTO code_counters (name, value) VALUES ('links', 0);

-- The permutation's key, made once by the first start and read by every replica after:
-- codes are stored, so the key must never change (a new key could map a later number onto
-- an earlier code). 32 bytes: 8 rounds × 32 bits (domain/feistel-permutation.ts).
CREATE TABLE code_keys (
  name       text        PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,31}$'),
  key        bytea       NOT NULL CHECK (length(key) = 32),
  created_at timestamptz NOT NULL
);

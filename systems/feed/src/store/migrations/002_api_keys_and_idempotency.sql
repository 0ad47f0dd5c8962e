-- 002: API keys per user (the write routes act as the key's user) and Idempotency-Key on
-- POST /v1/users/{id}/posts — infra's two shared tables (api-key-table.ts, idempotency-store.ts).
-- The key table is apiKeyTableSql + apiKeyUsageSql with one change: the owner column is int8,
-- as accounts.id is (a text column cannot reference it). Only sha256(key) is stored.
CREATE TABLE user_api_keys (
  prefix     text        PRIMARY KEY CHECK (prefix ~ '^fdk_[0-9a-f]{16}$'),
  user_id    int8        NOT NULL REFERENCES accounts (id),
  key_hash   char(64)    NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL,
  -- NULL: valid until rotated out or revoked.
  expires_at timestamptz,
  -- Written by authentication at most once per touch interval (api-key-table.ts), so it is not a write per request.
  last_used_at timestamptz,
  -- Set by a revocation, beside expires_at (which is what authentication checks).
  revoked_at timestamptz
);
CREATE INDEX user_api_keys_user_id ON user_api_keys (user_id);

-- idempotencyTableSql({ table: "idempotency_keys", scopeColumn: "user_id" }): the scope is the
-- author (a decimal id as text), so two users' keys never meet.
CREATE TABLE idempotency_keys (
  user_id text NOT NULL CHECK (char_length(user_id) BETWEEN 1 AND 255),
  key              text        NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
  -- The request fingerprint: a retry must match all three, else 422.
  request_method   text        NOT NULL,
  request_path     text        NOT NULL,
  body_sha256      text        NOT NULL CHECK (body_sha256 ~ '^[0-9a-f]{64}$'),
  status           text        NOT NULL CHECK (status IN ('in_progress', 'completed')),
  -- The step last committed (Stripe's atomic phases): a retry resumes from here.
  recovery_point   text        NOT NULL,
  -- Fencing token: bumped on every take-over, checked by advance/complete/release.
  generation       int4        NOT NULL DEFAULT 1 CHECK (generation >= 1),
  -- The owner's lease start; NULL when completed or released for a retry to resume.
  locked_at        timestamptz,
  created_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  response_status  int4        CHECK (response_status BETWEEN 100 AND 599),
  response_headers jsonb,
  response_body    bytea,
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (user_id, key),
  CONSTRAINT idempotency_keys_completed_has_response CHECK (
    (status = 'completed') = (completed_at IS NOT NULL AND response_status IS NOT NULL
                              AND response_headers IS NOT NULL AND response_body IS NOT NULL)
  ),
  CONSTRAINT idempotency_keys_completed_unlocked CHECK (status = 'in_progress' OR locked_at IS NULL)
);
-- The prune walks the oldest rows first, a bounded batch at a time.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- 005_idempotency: Idempotency-Key on POST /v1/links — infra's shared store (idempotency-store.ts,
-- its idempotencyTableSql for this table), scoped by workspace: a retried create returns the
-- first link instead of making a second one.
CREATE TABLE idempotency_keys (
  workspace_id text NOT NULL CHECK (char_length(workspace_id) BETWEEN 1 AND 255),
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
  CONSTRAINT idempotency_keys_pkey PRIMARY KEY (workspace_id, key),
  CONSTRAINT idempotency_keys_completed_has_response CHECK (
    (status = 'completed') = (completed_at IS NOT NULL AND response_status IS NOT NULL
                              AND response_headers IS NOT NULL AND response_body IS NOT NULL)
  ),
  CONSTRAINT idempotency_keys_completed_unlocked CHECK (status = 'in_progress' OR locked_at IS NULL)
);
-- The prune walks the oldest rows first, a bounded batch at a time.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);


-- 008_subscription_status: an endpoint's health on its subscription, for its tenant to see
-- (WH-16; domain/endpoint-health.ts). `active` stays the switch every query already reads
-- (fan-out, the re-check); `status` says more, and the two can never disagree.
--
--   active       deliveries flow
--   failing      the last attempt failed (failing_since: the first failure of the run);
--                still delivering, retried for the whole window
--   quarantined  client errors persisted (client_errors in a row since client_errors_since)
--   disabled     410 Gone, or the tenant switched it off

ALTER TABLE subscriptions
  ADD COLUMN status              text        NOT NULL DEFAULT 'active'
    CHECK (status IN ('active', 'failing', 'quarantined', 'disabled')),
  -- Why the current status (null when active): the failure for failing, else disabled_reason.
  ADD COLUMN status_reason       text        CHECK (status_reason IS NULL OR char_length(status_reason) BETWEEN 1 AND 200),
  ADD COLUMN failing_since       timestamptz,
  -- The endpoint's client errors (3xx, 4xx, refused address) in a row: the quarantine input.
  ADD COLUMN client_errors       int4        NOT NULL DEFAULT 0 CHECK (client_errors >= 0),
  ADD COLUMN client_errors_since timestamptz;

-- Subscriptions disabled before this migration: the worker wrote "quarantined: …" for its own.
UPDATE subscriptions
   SET status = CASE WHEN disabled_reason LIKE 'quarantined:%' THEN 'quarantined' ELSE 'disabled' END,
       status_reason = left(disabled_reason, 200)
 WHERE NOT active;

ALTER TABLE subscriptions
  ADD CONSTRAINT subscriptions_status_matches_active CHECK (active = (status IN ('active', 'failing')));

-- 004_deliveries: one delivery per (event, subscription) and its attempts (WH-08, WH-09).

CREATE TABLE deliveries (
  id               text        PRIMARY KEY CHECK (id ~ '^dlv_[0-9a-f]{32}$'),
  event_id         text        NOT NULL,
  -- The event's seq, copied so the ordering rule (WH-03) reads one table.
  event_seq        int8        NOT NULL,
  subscription_id  text        NOT NULL,
  tenant_id        text        NOT NULL,
  state            text        NOT NULL CHECK (state IN
                     ('pending', 'in_flight', 'succeeded', 'failed', 'expired', 'quarantined', 'cancelled')),
  -- When the delivery is claimable: its retry time while pending, its lease's end while
  -- in flight (a dead worker's delivery becomes due again when the lease runs out, WH-11).
  next_attempt_at  timestamptz NOT NULL,
  attempts         int4        NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- Client errors (3xx, 4xx) in a row: the delivery core quarantines at its bound (WH-16).
  client_error_streak int4     NOT NULL DEFAULT 0 CHECK (client_error_streak >= 0),
  lease_owner      text,
  lease_expires_at timestamptz,
  -- Fencing token: bumped by every claim and every settling write; each write of a worker
  -- is a compare-and-swap on it (WH-10), so a worker whose lease was taken over loses.
  lease_version    int8        NOT NULL DEFAULT 0,
  -- The event's creation + the tenant's window: no attempt starts after it (WH-18, WH-23).
  deadline_at      timestamptz NOT NULL,
  -- WH-03: the payload value at the subscription's ordering path; NULL: unordered.
  ordering_key     text        CHECK (ordering_key IS NULL OR char_length(ordering_key) <= 255),
  last_status      int4,
  last_attempt_at  timestamptz,
  -- Why a delivery stopped without success (inactive subscription, deadline, payload gone…).
  state_reason     text        CHECK (state_reason IS NULL OR char_length(state_reason) <= 200),
  replays          int4        NOT NULL DEFAULT 0 CHECK (replays >= 0),
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  finished_at      timestamptz,
  -- WH-09: the relay publishing one event twice still yields one delivery per subscription.
  CONSTRAINT deliveries_event_subscription_key UNIQUE (event_id, subscription_id),
  -- Event and endpoint belong to the delivery's tenant, enforced by the engine (WH-12).
  CONSTRAINT deliveries_event_fkey FOREIGN KEY (tenant_id, event_id) REFERENCES events (tenant_id, id),
  CONSTRAINT deliveries_subscription_fkey
    FOREIGN KEY (tenant_id, subscription_id) REFERENCES subscriptions (tenant_id, id),
  CONSTRAINT deliveries_lease_whole CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)),
  CONSTRAINT deliveries_leased_iff_in_flight CHECK ((state = 'in_flight') = (lease_owner IS NOT NULL)),
  CONSTRAINT deliveries_in_flight_due_at_lease_end
    CHECK (state <> 'in_flight' OR next_attempt_at = lease_expires_at)
);

-- "Due deliveries": the global claim scan and the per-tenant one (fair scheduling claims
-- tenant by tenant). Partial: finished deliveries, the bulk of the table, are not in them.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state IN ('pending', 'in_flight');
CREATE INDEX deliveries_due_by_tenant ON deliveries (tenant_id, next_attempt_at)
  WHERE state IN ('pending', 'in_flight');
-- "Oldest queued" per tenant (WH-24): the first entry of each tenant's range.
CREATE INDEX deliveries_queued_by_tenant ON deliveries (tenant_id, created_at)
  WHERE state IN ('pending', 'in_flight');
-- WH-03 head check: is there an unfinished, older delivery for this endpoint and key?
CREATE INDEX deliveries_ordering_head ON deliveries (subscription_id, ordering_key, event_seq)
  WHERE ordering_key IS NOT NULL AND state IN ('pending', 'in_flight');
-- The retention sweeper's scan of deliveries whose deadline passed.
CREATE INDEX deliveries_deadline ON deliveries (deadline_at) WHERE state IN ('pending', 'in_flight');
-- Tenant listings, newest first, keyset-paged by (created_at, id).
CREATE INDEX deliveries_tenant_listing ON deliveries (tenant_id, created_at, id);

CREATE TABLE attempts (
  delivery_id    text        NOT NULL REFERENCES deliveries (id),
  attempt_no     int4        NOT NULL CHECK (attempt_no >= 1),
  tenant_id      text        NOT NULL,
  worker_id      text        NOT NULL CHECK (char_length(worker_id) BETWEEN 1 AND 200),
  started_at     timestamptz NOT NULL,
  duration_ms    int4        NOT NULL CHECK (duration_ms >= 0),
  -- The delivery core's class of the outcome (`2xx`, `timeout`, `connect_error`, …).
  response_class text        NOT NULL CHECK (response_class ~ '^[a-z0-9_]{1,32}$'),
  status         int4        CHECK (status IS NULL OR status BETWEEN 100 AND 599),
  -- Which phase failed (dns, connect, headers, body, policy): a delivery log needs it.
  error_phase    text        CHECK (error_phase IS NULL OR error_phase ~ '^[a-z_]{1,32}$'),
  error          text        CHECK (error IS NULL OR char_length(error) <= 500),
  PRIMARY KEY (delivery_id, attempt_no)
);
CREATE INDEX attempts_started ON attempts (started_at);

-- What stays after attempt rows pass their retention (WH-22 "aggregate metrics stay"):
-- per tenant, day and response class, folded in by the sweeper as it deletes them.
CREATE TABLE attempt_stats (
  tenant_id       text NOT NULL,
  day             date NOT NULL,
  response_class  text NOT NULL,
  attempts        int8 NOT NULL CHECK (attempts >= 0),
  duration_ms_sum int8 NOT NULL CHECK (duration_ms_sum >= 0),
  PRIMARY KEY (tenant_id, day, response_class)
);

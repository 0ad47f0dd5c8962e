-- 002_subscriptions: endpoints a tenant registered, and their signing secrets (WH-08).

CREATE TABLE subscriptions (
  id               text        PRIMARY KEY CHECK (id ~ '^sub_[0-9a-f]{32}$'),
  tenant_id        text        NOT NULL REFERENCES tenants (id),
  -- Checked by the API's URL policy (SSRF) on write and again by the sender at send time.
  url              text        NOT NULL CHECK (char_length(url) BETWEEN 8 AND 2048),
  -- Filters (`invoice.paid`, `invoice.*`, `*`); NULL receives every type.
  event_types      text[]      CHECK (event_types IS NULL OR cardinality(event_types) BETWEEN 1 AND 50),
  active           boolean     NOT NULL DEFAULT true,
  disabled_reason  text        CHECK (disabled_reason IS NULL OR char_length(disabled_reason) BETWEEN 1 AND 200),
  -- The newest secret's version: what signs first (WH-08 "secret_version").
  secret_version   int4        NOT NULL DEFAULT 1 CHECK (secret_version >= 1),
  -- Per-endpoint limits the scheduler applies (WH-15); NULL rate: unlimited.
  rate_limit_per_s int4        CHECK (rate_limit_per_s IS NULL OR rate_limit_per_s BETWEEN 1 AND 10000),
  max_concurrency  int4        NOT NULL DEFAULT 4 CHECK (max_concurrency BETWEEN 1 AND 100),
  -- WH-03 opt-in: payload path (`{data,object,id}`) whose value orders this endpoint's deliveries.
  ordering_key_path text[]     CHECK (ordering_key_path IS NULL OR cardinality(ordering_key_path) BETWEEN 1 AND 8),
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL,
  -- The target of deliveries' (tenant_id, subscription_id) key: a delivery cannot point at
  -- another tenant's endpoint, whatever the code above it does.
  CONSTRAINT subscriptions_tenant_id_key UNIQUE (tenant_id, id),
  -- A disabled endpoint says why (410 Gone, quarantine, the tenant's own switch).
  CONSTRAINT subscriptions_disabled_has_reason CHECK (active OR disabled_reason IS NOT NULL)
);
-- Fan-out reads the tenant's active endpoints; listings page by (created_at, id).
CREATE INDEX subscriptions_tenant_active ON subscriptions (tenant_id) WHERE active;
CREATE INDEX subscriptions_tenant_listing ON subscriptions (tenant_id, created_at, id);

-- Standard Webhooks secrets (`whsec_<base64>`). Kept in clear because HMAC needs the key
-- itself (encrypting this column with a KMS key is the production step after this one).
-- Rotation adds a version and gives the older ones an expiry: during the overlap the
-- sender signs with every live secret (WH-02 "client secret rotation").
CREATE TABLE subscription_secrets (
  subscription_id text        NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
  version         int4        NOT NULL CHECK (version >= 1),
  secret          text        NOT NULL CHECK (secret ~ '^whsec_[A-Za-z0-9+/]{32,88}={0,2}$'),
  created_at      timestamptz NOT NULL,
  expires_at      timestamptz,
  PRIMARY KEY (subscription_id, version)
);

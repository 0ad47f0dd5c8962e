-- 001_tenants: tenants and their API keys (WH-08, WH-02 "authorization per tenant").
-- Times come from the service's clock (epoch ms turned into timestamptz by the store).

CREATE TABLE tenants (
  id                  text        PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name                text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  -- Share of delivery capacity under weighted fair scheduling (WH-15, WH-21).
  weight              int4        NOT NULL DEFAULT 1 CHECK (weight BETWEEN 1 AND 1000),
  -- Retry window of each delivery, from its event's creation: at most 24 h (WH-02, WH-18).
  delivery_window_s   int4        NOT NULL DEFAULT 86400 CHECK (delivery_window_s BETWEEN 1 AND 86400),
  -- How long payloads are kept (WH-22): separate from attempts, never shorter than the
  -- retry window (a delivery must not outlive the body it sends), at most 7 days.
  payload_retention_s int4        NOT NULL DEFAULT 86400 CHECK (payload_retention_s BETWEEN 1 AND 604800),
  -- How long attempt rows are kept; older ones are folded into attempt_stats first.
  attempt_retention_s int4        NOT NULL DEFAULT 2592000 CHECK (attempt_retention_s BETWEEN 3600 AND 31536000),
  created_at          timestamptz NOT NULL,
  CONSTRAINT tenants_payload_outlives_window CHECK (payload_retention_s >= delivery_window_s)
);

-- A key is `whk_<16 hex>_<secret>`: the prefix is public and finds the row; only sha256(key)
-- is stored, so a copy of this table lets nobody in.
CREATE TABLE tenant_api_keys (
  prefix     text        PRIMARY KEY CHECK (prefix ~ '^whk_[0-9a-f]{16}$'),
  tenant_id  text        NOT NULL REFERENCES tenants (id),
  key_hash   char(64)    NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL,
  -- NULL: valid until revoked.
  expires_at timestamptz
);
CREATE INDEX tenant_api_keys_tenant ON tenant_api_keys (tenant_id);

-- 001_tenants: the tenants whose series the TSDB keeps apart, and their API keys (the
-- ingest and the query API resolve a bearer key to its tenant). The key table is infra's
-- `apiKeyTableSql` + `apiKeyUsageSql`. A key is `mtk_<16 hex>_<secret>`: the prefix is
-- public and finds the row; only sha256(key) is stored.

CREATE TABLE tenants (
  id                      text        PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name                    text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  created_at              timestamptz NOT NULL,
  -- MT-16: the tenant's ceilings; NULL = the deployment's defaults.
  max_series              integer     CHECK (max_series > 0),
  max_series_per_metric   integer     CHECK (max_series_per_metric > 0)
);

CREATE TABLE tenant_api_keys (
  prefix     text        PRIMARY KEY CHECK (prefix ~ '^mtk_[0-9a-f]{16}$'),
  tenant_id  text        NOT NULL REFERENCES tenants (id),
  key_hash   char(64)    NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL,
  -- NULL: valid until rotated out or revoked.
  expires_at timestamptz
);
CREATE INDEX tenant_api_keys_tenant_id ON tenant_api_keys (tenant_id);

ALTER TABLE tenant_api_keys
  ADD COLUMN last_used_at timestamptz,
  ADD COLUMN revoked_at timestamptz;

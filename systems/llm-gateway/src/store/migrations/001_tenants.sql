-- 001_tenants: tenants and their API keys (LG-14: the key and quota table, looked up by key).
-- The key table is infra's `apiKeyTableSql` + `apiKeyUsageSql` (test/tenant-keys-table.test.ts
-- checks it still is). A key is `llm_<16 hex>_<secret>`: the prefix is public and finds the
-- row; only sha256(key) is stored.

CREATE TABLE tenants (
  id         text        PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name       text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
  created_at timestamptz NOT NULL
);

CREATE TABLE tenant_api_keys (
  prefix     text        PRIMARY KEY CHECK (prefix ~ '^llm_[0-9a-f]{16}$'),
  tenant_id text NOT NULL REFERENCES tenants (id),
  key_hash   char(64)    NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL,
  -- NULL: valid until rotated out or revoked.
  expires_at timestamptz
);
CREATE INDEX tenant_api_keys_tenant_id ON tenant_api_keys (tenant_id);

ALTER TABLE tenant_api_keys
  -- Written by authentication at most once per touch interval (api-key-table.ts), so it is not a write per request.
  ADD COLUMN last_used_at timestamptz,
  -- Set by a revocation, beside expires_at (which is what authentication checks).
  ADD COLUMN revoked_at timestamptz;

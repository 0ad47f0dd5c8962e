-- 002_links: workspaces and their API keys (stored hashed), and the links themselves.

CREATE TABLE workspaces (
  id         text        PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at timestamptz NOT NULL
);

-- A key is `usk_<16 hex>_<secret>`; only sha256(key) is stored (infra's api-key-table.ts,
-- the same DDL as apiKeyTableSql + apiKeyUsageSql).
CREATE TABLE workspace_api_keys (
  prefix       text        PRIMARY KEY CHECK (prefix ~ '^usk_[0-9a-f]{16}$'),
  workspace_id text        NOT NULL REFERENCES workspaces (id),
  key_hash     char(64)    NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz,
  last_used_at timestamptz,
  revoked_at   timestamptz
);
CREATE INDEX workspace_api_keys_workspace_id ON workspace_api_keys (workspace_id);

-- code → URL, always read by key (domain, code): the redirect's one lookup (US-13).
-- Generated codes are inserted without a collision check (US-05: unique by construction;
-- the primary key would turn a bug into an error, never into a second link). Aliases are
-- inserted with ON CONFLICT DO NOTHING: the conditional write of US-18.
CREATE TABLE links (
  domain          text        NOT NULL CHECK (domain ~ '^[a-z0-9.-]{1,253}(:[0-9]{1,5})?$'),
  code            text        NOT NULL CHECK (code ~ '^[A-Za-z0-9_-]{3,64}$'),
  workspace_id    text        NOT NULL REFERENCES workspaces (id),
  target          text        NOT NULL CHECK (length(target) BETWEEN 1 AND 2048),
  status          smallint    NOT NULL DEFAULT 302 CHECK (status IN (301, 302, 307, 308)),
  cache_max_age_s integer     NOT NULL DEFAULT 300 CHECK (cache_max_age_s BETWEEN 0 AND 86400),
  forward_query   boolean     NOT NULL DEFAULT true,
  is_alias        boolean     NOT NULL DEFAULT false,
  tags            text[]      NOT NULL DEFAULT '{}',
  -- PostgreSQL has no TTL: the read path filters on it, the reaper deletes past it (US-12).
  expires_at      timestamptz,
  -- Disabled by an admin (US-16): kept, answered 410, never redirected.
  disabled_at     timestamptz,
  disabled_reason text,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  PRIMARY KEY (domain, code)
);
-- The workspace's listing, newest first, by keyset (created_at, domain, code).
CREATE INDEX links_workspace_created ON links (workspace_id, created_at DESC, domain DESC, code DESC);
CREATE INDEX links_tags ON links USING gin (tags);
-- The reaper's scan: only links that expire.
CREATE INDEX links_expires_at ON links (expires_at) WHERE expires_at IS NOT NULL;

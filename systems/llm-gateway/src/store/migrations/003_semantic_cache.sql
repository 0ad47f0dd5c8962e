-- 003_semantic_cache: earlier answers by embedding (LG-11, LG-12), in the database so every
-- replica shares them (LG-14). Debian 12's PostgreSQL 15 has no pgvector; both it and PGlite
-- have the `cube` contrib, whose distance runs in C (an array dot product in SQL took 14 s
-- per lookup at 100k entries). The extension lives in `public` (one per database: a
-- system's own schema may be dropped with CASCADE and must not take it along), so its names
-- are written `public.`-qualified. A lookup is an exact scan of ONE tenant's entries of ONE
-- scope (the model and every parameter but the messages): the btree narrows to them, the
-- euclidean distance of unit vectors ranks them (cosine = 1 - d²/2). No approximate index.

CREATE EXTENSION IF NOT EXISTS cube SCHEMA public;

CREATE TABLE llm_semantic_cache (
  id         bigserial   PRIMARY KEY,
  tenant_id  text        NOT NULL,
  scope      char(64)    NOT NULL CHECK (scope ~ '^[0-9a-f]{64}$'),
  prompt     text        NOT NULL,
  embedding  public.cube NOT NULL,
  answer     jsonb       NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX llm_semantic_cache_lookup ON llm_semantic_cache (tenant_id, scope);
CREATE INDEX llm_semantic_cache_expiry ON llm_semantic_cache (expires_at);

-- 005_merchants: merchants and their API keys (stored hashed).
-- Every merchant-facing query is scoped by merchant_id (ARCHITECTURE rule 8).

-- The id is the tenant handle everywhere: payments.merchant_id, the acquirer key
-- `${merchant_id}:${idempotency_key}` (so no ':' here), the acquirer's merchantId field.
CREATE TABLE merchants (
  id         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_-]{1,64}$'),
  name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
  created_at timestamptz NOT NULL
);

-- A key is `sk_<16 hex>_<secret>`. The prefix `sk_<16 hex>` is public: shown to tell keys apart and
-- used to find the row; only sha256(key) is stored, so a copy of this table lets nobody in.
CREATE TABLE merchant_api_keys (
  prefix      text PRIMARY KEY CHECK (prefix ~ '^sk_[0-9a-f]{16}$'),
  merchant_id text NOT NULL REFERENCES merchants (id),
  key_hash    char(64) NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at  timestamptz NOT NULL,
  -- NULL: valid until rotated. A rotation sets it (now, or now + an overlap for a rolling deploy).
  expires_at  timestamptz
);
CREATE INDEX merchant_api_keys_merchant_id ON merchant_api_keys (merchant_id);

-- A merchant's ledger accounts live in merchant_accounts (003_payments.sql, which runs before this
-- file, so it cannot reference merchants); store/merchant-accounts.ts provisions them.

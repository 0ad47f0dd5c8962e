-- 012_api_key_usage: when each API key was last used and when it was revoked, for the admin key listing
-- (GET /v1/admin/…/api-keys). The same columns as @casebook/infra/sql/api-key-table's
-- apiKeyUsageSql; existing keys start as never used, never revoked.
ALTER TABLE merchant_api_keys
  -- Written by authentication at most once per touch interval (a minute), not once per request.
  ADD COLUMN last_used_at timestamptz,
  -- Set by a revocation, beside expires_at (which is what authentication checks).
  ADD COLUMN revoked_at timestamptz;

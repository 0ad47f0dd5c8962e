-- 013_opaque_ids: the API's payment and refund ids are opaque, not the tables' identity.
-- The int8 identity counts every merchant's payments in one sequence, so merchant B's first id
-- told it merchant A's volume. The int8 `id` stays the internal key (foreign keys, ledger keys
-- `pay:<id>:…`, lease queues); the API speaks `public_id` only.
--
-- Rows from before keep their old id as their public id (`id::text`), so old URLs, stored
-- idempotent replays and events already sent keep naming the same payment. New rows get
-- `pay_`/`re_` + 32 hex of a random UUID (122 random bits) from the column default, so every
-- insert path gets one and none can forget it. The number after 011 is 013: 012 is taken by
-- another branch's migration.

ALTER TABLE payments ADD COLUMN public_id text;
UPDATE payments SET public_id = id::text;
ALTER TABLE payments
  ALTER COLUMN public_id SET DEFAULT 'pay_' || replace(gen_random_uuid()::text, '-', ''),
  ALTER COLUMN public_id SET NOT NULL,
  ADD CONSTRAINT payments_public_id_shape CHECK (public_id ~ '^([1-9][0-9]{0,18}|pay_[0-9a-f]{32})$'),
  ADD CONSTRAINT payments_public_id_key UNIQUE (public_id);

ALTER TABLE payment_refunds ADD COLUMN public_id text;
UPDATE payment_refunds SET public_id = id::text;
ALTER TABLE payment_refunds
  ALTER COLUMN public_id SET DEFAULT 're_' || replace(gen_random_uuid()::text, '-', ''),
  ALTER COLUMN public_id SET NOT NULL,
  ADD CONSTRAINT payment_refunds_public_id_shape CHECK (public_id ~ '^([1-9][0-9]{0,18}|re_[0-9a-f]{32})$'),
  ADD CONSTRAINT payment_refunds_public_id_key UNIQUE (public_id);

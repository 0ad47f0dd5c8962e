-- 017_merchant_ledger_accounts: accounts opened through the ledger API (issue 14), each owned by one
-- merchant. The payments saga's own accounts (merchant_accounts, 003) are not in here: the ledger
-- API moves money only between accounts the merchant opened through it, so no API call can touch
-- the holds and balances a payment's saga relies on.
--
-- An account is opened under the request's Idempotency-Key: (merchant_id, idem_key) is UNIQUE, so a
-- retried request finds the account its first attempt opened (the fingerprint says whether it asked
-- the same), and never opens a second one.
CREATE TABLE ledger_api_accounts (
  account_id  int8 PRIMARY KEY REFERENCES accounts (id),
  merchant_id text NOT NULL REFERENCES merchants (id),
  idem_key    text NOT NULL CHECK (length(idem_key) BETWEEN 1 AND 255),
  fingerprint text NOT NULL,
  UNIQUE (merchant_id, idem_key)
);

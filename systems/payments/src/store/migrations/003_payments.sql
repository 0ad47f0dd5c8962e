-- 003_payments: payments and their durable sagas (seed 000 §4, PY-05, PY-06, PY-12, PY-13, PY-15, PY-16).
-- The saga's whole state lives in the payment row (orchestration keeps it in one place, auditable:
-- PY-05); any number of orchestrator processes claim due rows with FOR UPDATE SKIP LOCKED and a
-- lease (owner, until); every step write is a compare-and-set on `version`.

-- The ledger accounts of a merchant in a currency, created on first use (ON CONFLICT: race-safe).
-- customer_funds is the source of charges, merchant_pending holds reserved and captured money
-- until the acquirer settles it, merchant_available receives settled money (reconciliation).
CREATE TABLE merchant_accounts (
  merchant_id text    NOT NULL CHECK (char_length(merchant_id) BETWEEN 1 AND 255),
  currency    char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  role        text    NOT NULL CHECK (role IN ('customer_funds', 'merchant_pending', 'merchant_available')),
  account_id  int8    NOT NULL UNIQUE REFERENCES accounts (id),
  PRIMARY KEY (merchant_id, currency, role)
);

CREATE TABLE payments (
  id                        int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  merchant_id               text    NOT NULL CHECK (char_length(merchant_id) BETWEEN 1 AND 255),
  idempotency_key           text    NOT NULL CHECK (char_length(idempotency_key) BETWEEN 1 AND 255),
  -- PY-06: the ONE key sent to the acquirer on every attempt: `${merchantId}:${idempotencyKey}`.
  acquirer_key              text    NOT NULL UNIQUE,
  amount_minor              int8    NOT NULL CHECK (amount_minor > 0),
  currency                  char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  card_token                text    NOT NULL,
  capture                   boolean NOT NULL,
  status                    text    NOT NULL CHECK (status IN ('pending', 'authorized', 'captured', 'voided',
                                      'declined', 'failed', 'refunded', 'partially_refunded')),
  decline_reason            text,
  failure                   text,
  -- The saga: what to do next, for what intent, how many acquirer calls so far, when.
  step                      text    NOT NULL CHECK (step IN ('authorize', 'query', 'capture', 'void', 'done')),
  intent                    text    NOT NULL CHECK (intent IN ('authorize', 'capture', 'void')),
  attempts                  int4    NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  next_run_at               timestamptz NOT NULL,
  lease_owner               text,
  lease_until               timestamptz,
  version                   int8    NOT NULL DEFAULT 1,
  -- The idempotency record's fencing generation, so the final step can store the response (PY-13).
  idem_generation           int4    NOT NULL,
  acquirer_authorization_id text,
  hold_transaction_id       int8    NOT NULL REFERENCES transactions (id),
  captured_minor            int8    NOT NULL DEFAULT 0 CHECK (captured_minor >= 0),
  refunded_minor            int8    NOT NULL DEFAULT 0 CHECK (refunded_minor >= 0 AND refunded_minor <= captured_minor),
  started_at                timestamptz NOT NULL,
  created_at                timestamptz NOT NULL,
  updated_at                timestamptz NOT NULL,
  finished_at               timestamptz,
  UNIQUE (merchant_id, idempotency_key),
  CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);
-- The claim query walks due, unfinished sagas oldest first.
CREATE INDEX payments_due ON payments (next_run_at) WHERE step <> 'done';
CREATE INDEX payments_merchant ON payments (merchant_id, id);

-- PY-15: a refund is its own small saga with its own idempotency key and acquirer call;
-- its ledger effect is a reversal of the payment's posted hold, linked by reference.
CREATE TABLE payment_refunds (
  id                   int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  payment_id           int8 NOT NULL REFERENCES payments (id),
  merchant_id          text NOT NULL,
  idempotency_key      text NOT NULL,
  -- Sent to the acquirer on every attempt of this refund.
  acquirer_key         text NOT NULL UNIQUE,
  amount_minor         int8 NOT NULL CHECK (amount_minor > 0),
  status               text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
  failure              text,
  attempts             int4 NOT NULL DEFAULT 0,
  next_run_at          timestamptz NOT NULL,
  lease_owner          text,
  lease_until          timestamptz,
  version              int8 NOT NULL DEFAULT 1,
  idem_generation      int4 NOT NULL,
  acquirer_refund_id   text,
  ledger_transaction_id int8 REFERENCES transactions (id),
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  UNIQUE (merchant_id, idempotency_key),
  CHECK ((lease_owner IS NULL) = (lease_until IS NULL))
);
CREATE INDEX payment_refunds_due ON payment_refunds (next_run_at) WHERE status = 'pending';
CREATE INDEX payment_refunds_payment ON payment_refunds (payment_id);

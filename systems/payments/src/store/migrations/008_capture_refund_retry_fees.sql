-- 008_capture_refund_retry_fees: partial capture (PY-16), the refund retry worker's terminal state (PY-15), fee reconciliation
-- and the merchant-scoped reconciliation exceptions API (PY-10).

-- PY-16, Stripe's amount_to_capture: the part of the authorization a merchant asked to capture,
-- kept for every try of the capture step; NULL captures all of it.
ALTER TABLE payments ADD COLUMN capture_amount_minor int8
  CHECK (capture_amount_minor > 0 AND capture_amount_minor <= amount_minor);
-- Where the captured money was posted, the transaction refunds reverse: NULL after a full capture (the
-- hold itself was posted); after a partial one, the new transfer that posted the captured part in the
-- transaction that released the hold (store/ledger-partial-post.ts).
ALTER TABLE payments ADD COLUMN capture_transaction_id int8 REFERENCES transactions (id);

-- PY-15: `unresolved` is where the retry worker stops when its bound ran out and the acquirer's
-- outcome is still unknown. Terminal for the worker; the reservation stays (the refund may have
-- happened) and the D+1 settlement file decides.
ALTER TABLE payment_refunds DROP CONSTRAINT payment_refunds_status_check;
ALTER TABLE payment_refunds ADD CONSTRAINT payment_refunds_status_check
  CHECK (status IN ('pending', 'succeeded', 'failed', 'unresolved'));

-- PY-10 fees: one ledger account per currency receives the acquirer fees withheld from merchants'
-- captured money (merchant_pending → acquirer_fees), provisioned on first use.
CREATE TABLE platform_accounts (
  currency   char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
  role       text    NOT NULL CHECK (role IN ('acquirer_fees')),
  account_id int8    NOT NULL UNIQUE REFERENCES accounts (id),
  PRIMARY KEY (currency, role)
);

-- A fee the settlement file reports that differs from the contracted rate (or that could not be booked).
ALTER TABLE reconciliation_exceptions DROP CONSTRAINT reconciliation_exceptions_kind_check;
ALTER TABLE reconciliation_exceptions ADD CONSTRAINT reconciliation_exceptions_kind_check
  CHECK (kind IN ('missing_in_ledger', 'missing_at_acquirer', 'amount_mismatch', 'fee_mismatch'));

-- The merchant an exception belongs to (its payment's or refund's), NULL for a key none of ours
-- carries: the exceptions API shows a merchant only its own, and those only to operations.
ALTER TABLE reconciliation_exceptions ADD COLUMN merchant_id text;
UPDATE reconciliation_exceptions e SET merchant_id = COALESCE(
  (SELECT p.merchant_id FROM payments p WHERE p.id = e.payment_id),
  (SELECT r.merchant_id FROM payment_refunds r WHERE r.id = e.refund_id),
  (SELECT p.merchant_id FROM payments p WHERE e.operation = 'capture' AND p.acquirer_key = e.acquirer_key),
  (SELECT r.merchant_id FROM payment_refunds r WHERE e.operation = 'refund' AND r.acquirer_key = e.acquirer_key));
CREATE INDEX reconciliation_exceptions_merchant ON reconciliation_exceptions (merchant_id, id)
  WHERE merchant_id IS NOT NULL;

-- How an exception was resolved, so a second resolve can tell a repeat (answered with the stored
-- result) from a contradiction (409).
ALTER TABLE reconciliation_exceptions ADD COLUMN resolution_action text
  CHECK (resolution_action IN ('adjust', 'dismiss'));
UPDATE reconciliation_exceptions SET resolution_action =
  CASE WHEN adjustment_transaction_id IS NULL THEN 'dismiss' ELSE 'adjust' END
  WHERE status = 'resolved';
ALTER TABLE reconciliation_exceptions ADD CONSTRAINT reconciliation_exceptions_action_iff_resolved
  CHECK ((status = 'resolved') = (resolution_action IS NOT NULL));

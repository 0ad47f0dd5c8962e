/**
 * The payment saga's, refund retry's and payment API's error codes (PY-05, PY-06, PY-12, PY-15, PY-16).
 * Kept in their own file until the lead merges the payments registry; the HTTP layer
 * maps each to problem+json. Validation errors name the field in `errors: [{ field, message }]`.
 *
 * @example
 * throw paymentErrors.create("PAYMENTS_PAYMENT_NOT_FOUND", { fields: { id } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const paymentErrors = defineErrors({
  PAYMENTS_PAYMENT_INVALID: {
    status: 400,
    message: "The payment request is invalid; see `errors` for the field at fault. Nothing was stored.",
  },
  PAYMENTS_IDEMPOTENCY_KEY_MISSING: {
    status: 400,
    message: "Send an `Idempotency-Key` header (a fresh UUID per payment, reused on every retry of it).",
  },
  PAYMENTS_PAYMENT_NOT_FOUND: {
    status: 404,
    message: "No payment with this id for your merchant account.",
  },
  PAYMENTS_PAYMENT_STATE_CONFLICT: {
    status: 409,
    message:
      "The payment is not in a state that allows this operation: `paymentStatus` is its status now, `allowedActions` what it takes.",
  },
  PAYMENTS_CAPTURE_EXCEEDS_AUTHORIZED: {
    status: 422,
    message:
      "A capture takes at most the authorized amount; send `amountMinor` ≤ `authorizedMinor`, or none to capture it all. Nothing was stored.",
  },
  PAYMENTS_REFUND_NOT_FOUND: {
    status: 404,
    message: "No refund with this id on this payment of your merchant account.",
  },
  PAYMENTS_REFUND_EXCEEDS_CAPTURED: {
    status: 422,
    message: "Refunds would exceed the captured amount; refund at most `refundableMinor`.",
  },
  PAYMENTS_ACQUIRER_UNAVAILABLE: {
    status: 503,
    message:
      "The card acquirer is unavailable (circuit open); nothing was charged. Retry after `retryAfterMs`.",
  },
  PAYMENTS_SAGA_LEASE_LOST: {
    status: 409,
    message:
      "Another orchestrator took this payment's saga over; its step was not applied here. Nothing to do: the owner finishes it.",
  },
  PAYMENTS_REFUND_LEASE_LOST: {
    status: 409,
    message:
      "Another worker or request holds this refund now; its outcome was not applied here. Nothing to do: the holder settles it.",
  },
});

export type PaymentErrorCode = keyof typeof paymentErrors.specs;

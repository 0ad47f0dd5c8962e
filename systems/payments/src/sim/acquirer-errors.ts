/**
 * The acquirer simulator's error registry: the refusals a card acquirer answers
 * with, each with its HTTP status and what the caller should do. Rule violations
 * name the field at fault in `errors: [{ field, message }]`, the same shape the
 * service base uses for schema validation.
 *
 * @example
 * throw acquirerErrors.create("ACQUIRER_AUTHORIZATION_NOT_FOUND", { fields: { authorizationId } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const acquirerErrors = defineErrors({
  ACQUIRER_AUTHORIZATION_NOT_FOUND: {
    status: 404,
    message: "No authorization with this id or idempotency key; check the id, or authorize first.",
  },
  ACQUIRER_REFUND_NOT_FOUND: {
    status: 404,
    message:
      "No refund was made with this idempotency key; refund with it (the same key is safe to send again).",
  },
  ACQUIRER_IDEMPOTENCY_MISMATCH: {
    status: 422,
    message:
      "This idempotency key was used with different parameters; reuse a key only to retry the same call.",
  },
  ACQUIRER_AUTHORIZATION_DECLINED: {
    status: 409,
    message: "The authorization was declined; nothing can be captured, voided or refunded on it.",
  },
  ACQUIRER_AUTHORIZATION_VOIDED: {
    status: 409,
    message: "The authorization was voided; authorize again with a new idempotency key.",
  },
  ACQUIRER_ALREADY_CAPTURED: {
    status: 409,
    message:
      "The authorization was already captured (with another amount, or it cannot be voided); refund instead.",
  },
  ACQUIRER_NOT_CAPTURED: {
    status: 409,
    message: "Only a captured authorization can be refunded; capture it first, or void it.",
  },
  ACQUIRER_CAPTURE_EXCEEDS_AUTHORIZED: {
    status: 422,
    message: "The capture amount is larger than the authorized amount; capture at most `authorizedMinor`.",
  },
  ACQUIRER_REFUND_EXCEEDS_CAPTURED: {
    status: 422,
    message: "Refunds would exceed the captured amount; refund at most `refundableMinor`.",
  },
  ACQUIRER_CURRENCY_MISMATCH: {
    status: 422,
    message: "The currency differs from the authorization's; send the authorization's currency.",
  },
  ACQUIRER_TOO_MANY_REFUNDS: {
    status: 422,
    message: "This authorization reached its maximum number of refunds (`maxRefunds`).",
  },
  ACQUIRER_CAPACITY_REACHED: {
    status: 507,
    message: "The simulator holds `maxPayments` authorizations already; POST /admin/reset to start over.",
  },
  ACQUIRER_RATE_LIMITED: {
    status: 429,
    message: "Too many calls for this merchant in this second; retry after `retryAfterMs`.",
  },
  ACQUIRER_OUTAGE: {
    status: 503,
    message: "The acquirer is down (simulated outage); retry later with the same idempotency key.",
  },
  ACQUIRER_UPSTREAM_FAILED: {
    status: 502,
    message: "The card network failed before charging (simulated); retry with the same idempotency key.",
  },
  ACQUIRER_INTERNAL_FAILURE: {
    status: 500,
    message: "The acquirer failed before charging (simulated); retry with the same idempotency key.",
  },
  ACQUIRER_OVERLOADED: {
    status: 503,
    message: "The acquirer is overloaded (simulated) and did not charge; retry with backoff.",
  },
  ACQUIRER_SETTLEMENT_NOT_READY: {
    status: 409,
    message: "The settlement file of a day exists once the day is over (D+1); ask again after `readyAt`.",
  },
  ACQUIRER_DIFFERENCES_TOO_MANY: {
    status: 422,
    message: "More rows to drop or change than the settlement file holds; ask for fewer (`rows` available).",
  },
});

export type AcquirerErrorCode = keyof typeof acquirerErrors.specs;

/**
 * The idempotency layer's error codes (PY-01…PY-04, PY-13). Kept in their own file until
 * the lead merges the payments registry; the HTTP layer maps each to problem+json.
 * None of these stores anything: the request that gets one may be retried as is
 * (except MISMATCH, which needs a fresh key or the original parameters).
 *
 * @example
 * if (idempotencyErrors.is(err, "PAYMENTS_IDEMPOTENCY_IN_PROGRESS")) {
 *   reply.header("retry-after", Math.ceil(Number(err.fields.retryAfterMs) / 1000));
 * }
 */
import { defineErrors } from "@casebook/kit/errors";

export const idempotencyErrors = defineErrors({
  PAYMENTS_IDEMPOTENCY_KEY_INVALID: {
    status: 400,
    message:
      "The Idempotency-Key header must be 1 to 255 visible ASCII characters; send a fresh UUID per payment attempt and reuse it on every retry.",
  },
  PAYMENTS_IDEMPOTENCY_IN_PROGRESS: {
    status: 409,
    message:
      "A request with this Idempotency-Key is still being processed; retry after `retryAfterMs` to get its result.",
  },
  PAYMENTS_IDEMPOTENCY_MISMATCH: {
    status: 422,
    message:
      "This Idempotency-Key was already used with different parameters (see `mismatch`); reuse a key only to retry the identical request.",
  },
  PAYMENTS_IDEMPOTENCY_LOCK_LOST: {
    status: 409,
    message:
      "This request's claim on its Idempotency-Key expired and a retry took it over; its writes were rolled back. Retry with the same key to get the result.",
  },
  PAYMENTS_IDEMPOTENCY_RESPONSE_TOO_LARGE: {
    status: 500,
    message:
      "The response is too large to store for replay; this is a bug in the endpoint, not in the request.",
  },
});

export type IdempotencyErrorCode = keyof typeof idempotencyErrors.specs;

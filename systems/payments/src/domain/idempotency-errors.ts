/**
 * The idempotency layer's error codes (PY-01…PY-04, PY-13): the shared store's
 * (`@casebook/kit/idempotency`, `@casebook/infra/sql/idempotency-store`) under payments' area,
 * `PAYMENTS_IDEMPOTENCY_*`. The HTTP layer maps each to problem+json. None of these stores
 * anything: the request that gets one may be retried as is (except MISMATCH, which needs a fresh
 * key or the original parameters).
 *
 * @example
 * if (idempotencyErrors.is(err, "PAYMENTS_IDEMPOTENCY_IN_PROGRESS")) {
 *   reply.header("retry-after", Math.ceil(Number(err.fields.retryAfterMs) / 1000));
 * }
 */
import { defineIdempotencyErrors } from "@casebook/kit/idempotency";

/** What the shared store throws for payments. */
export const paymentsIdempotency = defineIdempotencyErrors("PAYMENTS", {
  KEY_INVALID:
    "The Idempotency-Key header must be 1 to 255 visible ASCII characters; send a fresh UUID per payment attempt and reuse it on every retry.",
});

export const idempotencyErrors = paymentsIdempotency.registry;

export type IdempotencyErrorCode = keyof typeof idempotencyErrors.specs;

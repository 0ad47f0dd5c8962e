/**
 * Payments' idempotency keys (PY-01…PY-04, PY-13): the shared Stripe-style store
 * (@casebook/infra/sql/idempotency-store) on payments' table `idempotency_keys`
 * (migrations/002_idempotency.sql), scoped by `merchant_id`, with payments' error codes
 * (`PAYMENTS_IDEMPOTENCY_*`).
 *
 * @example
 * const idempotency = paymentsIdempotencyStore(db, { clock: systemClock });
 * const begun = await idempotency.begin({ scope: merchantId, key, fingerprint });
 */
import { IdempotencyStore, type IdempotencyStoreOptions } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import { paymentsIdempotency } from "../errors.ts";

/** Where payments keeps its keys (002_idempotency.sql). */
export const PAYMENTS_IDEMPOTENCY_TABLE = { table: "idempotency_keys", scopeColumn: "merchant_id" } as const;

/** The store on payments' table; `options` tunes the clock, lease and retention. */
export function paymentsIdempotencyStore(
  db: Database,
  options: Omit<IdempotencyStoreOptions, "table" | "scopeColumn" | "errors"> = {},
): IdempotencyStore {
  return new IdempotencyStore(db, { ...PAYMENTS_IDEMPOTENCY_TABLE, errors: paymentsIdempotency, ...options });
}

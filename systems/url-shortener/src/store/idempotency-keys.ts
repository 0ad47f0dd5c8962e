/**
 * url-shortener's idempotency keys: infra's shared Stripe-style store
 * (@casebook/infra/sql/idempotency-store) on the table `idempotency_keys`
 * (migrations/005_idempotency.sql), scoped by workspace, with url-shortener's codes
 * (`URL_SHORTENER_IDEMPOTENCY_*`: in progress 409, another request with the key 422, a bad key 400).
 *
 * @example
 * const idempotency = shortenerIdempotencyStore(db, { clock });
 * const begun = await idempotency.begin({ scope: workspaceId, key, fingerprint });
 */
import { IdempotencyStore, type IdempotencyStoreOptions } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import { defineIdempotencyErrors } from "@casebook/kit/idempotency";

export const shortenerIdempotency = defineIdempotencyErrors("URL_SHORTENER");

export function shortenerIdempotencyStore(
  db: Database,
  options: Omit<IdempotencyStoreOptions, "table" | "scopeColumn" | "errors"> = {},
): IdempotencyStore {
  return new IdempotencyStore(db, {
    table: "idempotency_keys",
    scopeColumn: "workspace_id",
    errors: shortenerIdempotency,
    ...options,
  });
}

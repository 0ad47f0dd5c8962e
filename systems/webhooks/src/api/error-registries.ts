/**
 * Every error registry whose codes the webhooks API may answer with, for createService's
 * `errors` option (codes are defined once, in their area's file; none is redefined here).
 * createService refuses a code defined twice with different statuses, and
 * test/api-errors.test.ts refuses any code defined twice at all.
 *
 * @example
 * const service = createService({ name: "webhooks", version, errors: webhooksErrorRegistries });
 */
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import type { ErrorRegistry } from "@casebook/kit/errors";
import { deliveryErrors } from "../domain/delivery-errors.ts";
import { storeErrors } from "../domain/store-errors.ts";

export const webhooksErrorRegistries: readonly ErrorRegistry<string>[] = Object.freeze([
  storeErrors,
  deliveryErrors,
  sqlErrors,
]);

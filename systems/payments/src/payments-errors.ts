/**
 * The payments system's one error registry list: every per-area registry, merged for
 * createService's `errors` option (codes defined once, in their area's file; nothing is
 * redefined here). createService refuses a code defined twice with different statuses,
 * and test/payments-errors.test.ts refuses any code defined twice at all.
 *
 * @example
 * const service = createService({ name: "payments", version, errors: paymentsErrorRegistries });
 */

import { outboxErrors } from "@casebook/infra/sql/outbox-errors";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import type { ErrorRegistry } from "@casebook/kit/errors";
import { idempotencyErrors } from "./domain/idempotency-errors.ts";
import { ledgerErrors } from "./domain/ledger-errors.ts";
import { merchantErrors } from "./domain/merchant-errors.ts";
import { paymentErrors } from "./domain/payment-errors.ts";
import { reconciliationErrors } from "./domain/reconciliation-errors.ts";

/** Every registry whose codes the payments API may answer with (SQL_UNAVAILABLE → 503 among them). */
export const paymentsErrorRegistries: readonly ErrorRegistry<string>[] = Object.freeze([
  ledgerErrors,
  idempotencyErrors,
  paymentErrors,
  outboxErrors,
  merchantErrors,
  reconciliationErrors,
  sqlErrors,
]);

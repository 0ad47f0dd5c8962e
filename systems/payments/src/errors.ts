/**
 * The payments error registry, grouped by area: the ledger (`LEDGER_*`), the idempotency
 * layer (`PAYMENTS_IDEMPOTENCY_*`), the payment saga, refunds and payment API, merchants and
 * accounts, reconciliation; then the list of every registry the API may answer with, for
 * createService's `errors` option (infra's outbox and SQL codes too). Codes are defined once;
 * createService refuses a code defined twice with different statuses, and
 * test/payments-errors.test.ts refuses any code defined twice at all. The HTTP layer maps each
 * to problem+json; validation errors name the field in `errors: [{ field, message }]`.
 *
 * @example
 * const service = createService({ name: "payments", version, errors: paymentsErrorRegistries });
 * throw paymentErrors.create("PAYMENTS_PAYMENT_NOT_FOUND", { fields: { id } });
 */

import { outboxErrors } from "@casebook/infra/sql/outbox-errors";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import type { ErrorRegistry } from "@casebook/kit/errors";
import { defineErrors } from "@casebook/kit/errors";
import { defineIdempotencyErrors } from "@casebook/kit/idempotency";
import { kitErrors } from "@casebook/kit/kit-errors";

/** The ledger (`LEDGER_*`). */
export const ledgerErrors = defineErrors({
  LEDGER_TRANSFER_INVALID: {
    status: 400,
    message: "The transfer is malformed; `field` names what to fix.",
  },
  LEDGER_UNBALANCED: {
    status: 422,
    message: "Debits and credits differ in a currency; make each currency's legs sum to zero.",
  },
  LEDGER_ACCOUNT_NOT_FOUND: { status: 404, message: "No ledger account with this id." },
  LEDGER_CURRENCY_MISMATCH: {
    status: 422,
    message: "An entry's currency differs from its account's; use the account's currency.",
  },
  LEDGER_INSUFFICIENT_FUNDS: {
    status: 422,
    message: "A no-overdraft account would go below zero; nothing was written.",
  },
  LEDGER_IDEMPOTENCY_CONFLICT: {
    status: 422,
    message: "This idempotency key was used for a different request; use a new key for a new transfer.",
  },
  LEDGER_TRANSACTION_NOT_FOUND: { status: 404, message: "No ledger transaction with this id." },
  LEDGER_TRANSACTION_NOT_PENDING: {
    status: 409,
    message: "Only a pending transaction can be posted or voided; this one is already final.",
  },
  LEDGER_PENDING_EXPIRED: {
    status: 409,
    message: "This pending transaction passed its timeout: it can no longer be posted, only voided.",
  },
  LEDGER_REVERSAL_INVALID: {
    status: 409,
    message: "This transaction cannot be reversed as asked; see `reason`.",
  },
  LEDGER_BATCH_INVALID: {
    status: 400,
    message: "The batch is empty, too large, or repeats an idempotency key; see `reason`.",
  },
  LEDGER_CURSOR_INVALID: { status: 400, message: "The page cursor is malformed; pass back the one you got." },
});

export type LedgerErrorCode = keyof typeof ledgerErrors.specs;

/**
 * The idempotency layer (PY-01…PY-04, PY-13): the shared store's
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

/** What the shared store throws for payments. */
export const paymentsIdempotency = defineIdempotencyErrors("PAYMENTS", {
  KEY_INVALID:
    "The Idempotency-Key header must be 1 to 255 visible ASCII characters; send a fresh UUID per payment attempt and reuse it on every retry.",
});

export const idempotencyErrors = paymentsIdempotency.registry;

export type IdempotencyErrorCode = keyof typeof idempotencyErrors.specs;

/** The payment saga, refund retry and payment API (PY-05, PY-06, PY-12, PY-15, PY-16). */
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

/**
 * Merchants and accounts (`PAYMENTS_MERCHANT_*`, `PAYMENTS_ACCOUNT_*`).
 * Missing or wrong credentials use the shared `AUTH_MISSING` / `AUTH_INVALID` (401) from
 * @casebook/kit/errors; another merchant's resource is NOT_FOUND (404), never 403, so an id
 * says nothing about whether it exists for someone else.
 *
 * @example
 * throw merchantErrors.create("PAYMENTS_ACCOUNT_NOT_FOUND", { fields: { accountId: "42" } });
 */
export const merchantErrors = defineErrors({
  PAYMENTS_MERCHANT_INVALID: {
    status: 400,
    message: "The merchant is malformed; `field` names what to fix (id: 1-64 of A-Z a-z 0-9 _ -).",
  },
  PAYMENTS_MERCHANT_EXISTS: {
    status: 409,
    message: "A merchant with this id already exists; choose another id or rotate its key.",
  },
  PAYMENTS_MERCHANT_NOT_FOUND: { status: 404, message: "No merchant with this id." },
  PAYMENTS_ACCOUNT_NOT_FOUND: {
    status: 404,
    message: "You have no account with this id; list yours with GET /v1/accounts.",
  },
});

export type MerchantErrorCode = keyof typeof merchantErrors.specs;

/** Reconciliation (PY-10). */
export const reconciliationErrors = defineErrors({
  PAYMENTS_RECON_EXCEPTION_NOT_FOUND: {
    status: 404,
    message: "No reconciliation exception with this id.",
  },
  PAYMENTS_RECON_EXCEPTION_RESOLVED: {
    status: 409,
    message:
      "The exception was already resolved with the other action (see `resolutionAction`); repeat that action to read the result.",
  },
  PAYMENTS_RECON_UNKNOWN_KEY: {
    status: 422,
    message:
      "The acquirer settled a key no payment or refund of ours carries, so no merchant's ledger can be corrected automatically; investigate and resolve it by hand.",
  },
  PAYMENTS_RECON_FILE_UNAVAILABLE: {
    status: 502,
    message:
      "The acquirer's settlement file could not be fetched (see `status`/`cause`); retry the run later.",
  },
  PAYMENTS_RECON_DATE_INVALID: {
    status: 400,
    message: "The settlement date must be a calendar date YYYY-MM-DD.",
  },
});

/**
 * Every registry whose codes the payments API may answer with (SQL_UNAVAILABLE → 503 among them;
 * kit's GROUP_COMMIT_QUEUE_FULL → 503 when the ledger's group commit queue is full).
 */
export const paymentsErrorRegistries: readonly ErrorRegistry<string>[] = Object.freeze([
  ledgerErrors,
  idempotencyErrors,
  paymentErrors,
  outboxErrors,
  merchantErrors,
  reconciliationErrors,
  sqlErrors,
  kitErrors,
]);

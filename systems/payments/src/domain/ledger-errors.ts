/**
 * The ledger's error codes (`LEDGER_*`). Kept in their own registry until the lead merges the
 * payments registries; the HTTP layer maps each to problem+json with its status.
 *
 * @example
 * throw ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", { fields: { accountId: "42" } });
 */
import { defineErrors } from "@casebook/kit/errors";

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

/**
 * Reconciliation's error codes (PY-10), in their own file until the lead merges the payments registry.
 *
 * @example
 * throw reconciliationErrors.create("PAYMENTS_RECON_EXCEPTION_NOT_FOUND", { fields: { id: "7" } });
 */
import { defineErrors } from "@casebook/kit/errors";

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

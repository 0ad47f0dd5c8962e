/**
 * The merchant and account API's error codes (`PAYMENTS_MERCHANT_*`, `PAYMENTS_ACCOUNT_*`).
 * Missing or wrong credentials use the shared `AUTH_MISSING` / `AUTH_INVALID` (401) from
 * @casebook/kit/errors; another merchant's resource is NOT_FOUND (404), never 403, so an id
 * says nothing about whether it exists for someone else.
 *
 * @example
 * throw merchantErrors.create("PAYMENTS_ACCOUNT_NOT_FOUND", { fields: { accountId: "42" } });
 */
import { defineErrors } from "@casebook/kit/errors";

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

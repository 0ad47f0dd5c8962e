/**
 * JSON schemas of the account API. Money travels as an integer string of minor units
 * (JSON numbers lose precision past 2^53; the ledger keeps bigint cents, PY-07), ids as
 * decimal strings (int8), instants as ISO 8601 strings.
 *
 * @example
 * app.get("/v1/accounts/:id", { schema: { params: accountIdParams, response: { 200: accountView } } }, h);
 */

/** Largest page of GET /v1/accounts/{id}/transactions. */
export const MAX_TRANSACTIONS_PAGE = 100;
export const DEFAULT_TRANSACTIONS_PAGE = 20;

const moneyOut = { type: "string", pattern: "^-?[0-9]+$", description: "Minor units (cents)" } as const;
const idOut = { type: "string", pattern: "^[1-9][0-9]*$" } as const;
const instantOut = { type: "string", format: "date-time" } as const;

export const accountIdParams = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  // 19 digits at most: every int8 fits; a larger number is "not yours" like any other unknown id.
  properties: { id: { type: "string", pattern: "^[1-9][0-9]{0,18}$" } },
} as const;

export const transactionsQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: {
      type: "integer",
      minimum: 1,
      maximum: MAX_TRANSACTIONS_PAGE,
      default: DEFAULT_TRANSACTIONS_PAGE,
    },
    cursor: { type: "string", minLength: 1, maxLength: 64, description: "nextCursor of the previous page" },
  },
} as const;

export const balancesView = {
  type: "object",
  required: ["posted", "pending", "available"],
  properties: {
    posted: { ...moneyOut, description: "Posted credits − posted debits" },
    pending: {
      ...moneyOut,
      description: "Pending credits − pending debits (holds not yet posted or voided)",
    },
    available: { ...moneyOut, description: "Posted − pending debits: what can still be spent" },
  },
} as const;

export const accountView = {
  type: "object",
  required: ["id", "currency", "role", "noOverdraft", "createdAt", "balances"],
  properties: {
    id: idOut,
    currency: { type: "string", description: "ISO 4217" },
    role: { type: "string", enum: ["customer_funds", "merchant_pending", "merchant_available"] },
    noOverdraft: { type: "boolean" },
    createdAt: instantOut,
    balances: balancesView,
  },
} as const;

export const accountList = {
  type: "object",
  required: ["items"],
  properties: { items: { type: "array", items: accountView } },
} as const;

const entryView = {
  type: "object",
  required: ["id", "accountId", "currency", "direction", "amount"],
  properties: {
    id: idOut,
    accountId: idOut,
    currency: { type: "string" },
    direction: { type: "string", enum: ["D", "C"], description: "Debit or credit" },
    amount: { ...moneyOut, description: "Minor units, > 0" },
  },
} as const;

const transactionView = {
  type: "object",
  required: ["id", "status", "reversesId", "createdAt", "metadata", "entries"],
  properties: {
    id: idOut,
    status: { type: "string", enum: ["pending", "posted", "voided"] },
    reversesId: { anyOf: [idOut, { type: "null" }], description: "The transaction this one reverses" },
    createdAt: instantOut,
    metadata: { type: "object", additionalProperties: true },
    entries: {
      type: "array",
      items: entryView,
      description: "This merchant's legs of the transaction (other parties' legs are not shown)",
    },
  },
} as const;

export const transactionPage = {
  type: "object",
  required: ["items", "nextCursor"],
  properties: {
    items: { type: "array", items: transactionView },
    nextCursor: { anyOf: [{ type: "string" }, { type: "null" }], description: "null on the last page" },
  },
} as const;

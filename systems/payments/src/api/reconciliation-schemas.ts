/**
 * JSON schemas of the reconciliation exceptions API (PY-10). Money travels as an integer string of
 * minor units (or null when a side has nothing), exception ids as decimal strings (int8), payment and
 * refund ids as their public ids (domain/public-ids.ts), dates as YYYY-MM-DD,
 * instants as ISO 8601. Every object refuses unknown fields, so a typo gets a 400 naming it.
 *
 * @example
 * app.get("/v1/reconciliation/exceptions", { schema: { querystring: exceptionsQuery } }, handler);
 */
import { EXCEPTION_KINDS } from "../domain/reconciliation.ts";

/** Largest page of GET /v1/reconciliation/exceptions. */
export const MAX_EXCEPTIONS_PAGE_SIZE = 100;
export const DEFAULT_EXCEPTIONS_PAGE_SIZE = 20;
/** Longest resolution note kept for the audit trail. */
export const MAX_NOTE_CHARS = 500;

const datePattern = { type: "string", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" } as const;
const moneyOrNull = { type: ["string", "null"], pattern: "^-?[0-9]+$" } as const;
const idOrNull = { type: ["string", "null"], pattern: "^[1-9][0-9]*$" } as const;
const publicIdOrNull = { type: ["string", "null"] } as const;
const instantOrNull = { type: ["string", "null"] } as const;

export const exceptionIdParams = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  // 19 digits at most: every int8 fits; a larger number is "not yours" like any other unknown id.
  properties: { id: { type: "string", pattern: "^[1-9][0-9]{0,18}$" } },
} as const;

export const exceptionsQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    status: { type: "string", enum: ["open", "resolved"] },
    kind: { type: "string", enum: [...EXCEPTION_KINDS] },
    from: { ...datePattern, description: "First settlement date, inclusive (UTC, YYYY-MM-DD)" },
    to: { ...datePattern, description: "Last settlement date, inclusive (UTC, YYYY-MM-DD)" },
    limit: {
      type: "integer",
      minimum: 1,
      maximum: MAX_EXCEPTIONS_PAGE_SIZE,
      default: DEFAULT_EXCEPTIONS_PAGE_SIZE,
    },
    cursor: { type: "string", minLength: 1, maxLength: 64, description: "nextCursor of the previous page" },
  },
} as const;

export const resolveBody = {
  type: "object",
  required: ["action"],
  additionalProperties: false,
  properties: {
    action: {
      type: "string",
      enum: ["adjust", "dismiss"],
      description:
        "adjust: book NEW ledger entries so the ledger says what the acquirer settled; dismiss: close it",
    },
    note: {
      type: "string",
      minLength: 1,
      maxLength: MAX_NOTE_CHARS,
      description: "Why (required to dismiss)",
    },
  },
} as const;

export const exceptionView = {
  type: "object",
  required: ["id", "settlementDate", "kind", "operation", "acquirerKey", "currency", "status", "createdAt"],
  properties: {
    id: { type: "string" },
    settlementDate: { type: "string" },
    kind: { type: "string", enum: [...EXCEPTION_KINDS] },
    operation: { type: "string", enum: ["capture", "refund"] },
    acquirerKey: { type: "string" },
    currency: { type: "string" },
    expectedMinor: { ...moneyOrNull, description: "What our ledger booked (null: nothing)" },
    actualMinor: { ...moneyOrNull, description: "What the acquirer settled (null: nothing)" },
    paymentId: {
      ...publicIdOrNull,
      description: "The payment's public id (`pay_…`; a decimal id from before 013)",
    },
    refundId: {
      ...publicIdOrNull,
      description: "The refund's public id (`re_…`; a decimal id from before 013)",
    },
    status: { type: "string", enum: ["open", "resolved"] },
    resolutionAction: { type: ["string", "null"], description: "adjust | dismiss, once resolved" },
    resolution: { type: ["string", "null"] },
    adjustmentTransactionId: idOrNull,
    createdAt: { type: "string", format: "date-time" },
    resolvedAt: instantOrNull,
  },
} as const;

export const exceptionPage = {
  type: "object",
  required: ["items", "nextCursor"],
  properties: {
    items: { type: "array", items: exceptionView },
    nextCursor: {
      type: ["string", "null"],
      description: "Pass as `cursor` for the next page; null on the last",
    },
  },
} as const;

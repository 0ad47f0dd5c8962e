/**
 * JSON schemas of the ledger API (issue 14): validated by ajv before any handler runs, never
 * coerced (a `"true"` is not a boolean, a `12.5` not an amount), so a wrong type or an unknown
 * field is a 400 naming `/body/<field>`. Money travels as an integer string of minor units (or a
 * safe JSON integer on the way in), ids as decimal strings (int8), instants as ISO 8601.
 *
 * @example
 * app.post("/v1/ledger/transfers", { schema: { body: transferBody, response: { 201: transferView } } }, h);
 */
import { MAX_AMOUNT_MINOR, MAX_TIMEOUT_S } from "../domain/ledger.ts";
import { TRANSFER_RESULT_CODES } from "../domain/transfer-decisions.ts";

/** Transfers in one POST /v1/ledger/transfers/batch (TigerBeetle takes 8 190; one group commit here). */
export const MAX_BATCH_TRANSFERS = 1_000;
export const MAX_ENTRIES_PAGE = 100;
export const DEFAULT_ENTRIES_PAGE = 20;
/** Keys of an account's or a transfer's metadata (its serialized size is bounded too: 4 096 bytes). */
const MAX_METADATA_KEYS = 64;

const moneyOut = { type: "string", pattern: "^-?[0-9]+$", description: "Minor units" } as const;
const idOut = { type: "string", pattern: "^[1-9][0-9]*$" } as const;
const instantOut = { type: "string", format: "date-time" } as const;
const nullableInstant = { anyOf: [instantOut, { type: "null" }] } as const;

/** An account id in a body or a path: 1..18 digits (every id the identity will issue; larger reads as unknown). */
const accountIdIn = {
  type: "string",
  pattern: "^[1-9][0-9]{0,17}$",
  description: "A ledger account id",
} as const;

const amountIn = {
  anyOf: [
    { type: "string", pattern: "^[1-9][0-9]{0,17}$" },
    { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  ],
  description: `Minor units, 1..${MAX_AMOUNT_MINOR}: an integer string (exact past 2^53) or a safe JSON integer`,
} as const;

const metadataIn = {
  type: "object",
  maxProperties: MAX_METADATA_KEYS,
  description: "Your JSON object, stored as is (at most 4 096 bytes serialized)",
} as const;

const currencyIn = {
  type: "string",
  pattern: "^[A-Z]{3}$",
  description: "An active ISO 4217 code with a minor unit (USD, JPY, BHD)",
} as const;

export const accountBody = {
  type: "object",
  required: ["currency"],
  additionalProperties: false,
  properties: {
    currency: currencyIn,
    noOverdraft: {
      type: "boolean",
      default: false,
      description:
        "Refuse any debit that would take available (posted credits − posted and pending debits) below 0",
    },
    metadata: metadataIn,
  },
} as const;

export const idParams = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  properties: { id: accountIdIn },
} as const;

export const entriesQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: { type: "integer", minimum: 1, maximum: MAX_ENTRIES_PAGE, default: DEFAULT_ENTRIES_PAGE },
    cursor: { type: "string", minLength: 1, maxLength: 64, description: "nextCursor of the previous page" },
  },
} as const;

const transferFields = {
  debitAccountId: accountIdIn,
  creditAccountId: accountIdIn,
  amountMinor: amountIn,
  currency: currencyIn,
  pending: {
    type: "boolean",
    default: false,
    description: "A two-phase hold: post or void it later (POST /v1/ledger/transfers/{id}/post|void)",
  },
  timeoutS: {
    type: "integer",
    minimum: 1,
    maximum: MAX_TIMEOUT_S,
    description: "Pending only: seconds after which the hold can no longer be posted and is voided",
  },
  metadata: metadataIn,
} as const;

const transferRequired = ["debitAccountId", "creditAccountId", "amountMinor", "currency"] as const;

export const transferBody = {
  type: "object",
  required: transferRequired,
  additionalProperties: false,
  properties: transferFields,
} as const;

export const batchBody = {
  type: "object",
  required: ["transfers"],
  additionalProperties: false,
  properties: {
    transfers: {
      type: "array",
      minItems: 1,
      maxItems: MAX_BATCH_TRANSFERS,
      items: {
        type: "object",
        required: ["idempotencyKey", ...transferRequired],
        additionalProperties: false,
        properties: {
          idempotencyKey: {
            type: "string",
            pattern: "^[\\x21-\\x7e]{1,255}$",
            description: "This transfer's retry handle (TigerBeetle's id): a retry answers `exists`",
          },
          ...transferFields,
          linked: {
            type: "boolean",
            default: false,
            description: "Chains this transfer to the next: the chain commits whole or not at all",
          },
        },
      },
    },
  },
} as const;

export const accountView = {
  type: "object",
  required: ["id", "currency", "noOverdraft", "metadata", "createdAt", "balances"],
  additionalProperties: false,
  properties: {
    id: idOut,
    currency: { type: "string" },
    noOverdraft: { type: "boolean" },
    metadata: { type: "object", additionalProperties: true },
    createdAt: instantOut,
    balances: {
      type: "object",
      required: ["posted", "pending", "available"],
      additionalProperties: false,
      properties: {
        posted: { ...moneyOut, description: "Posted credits − posted debits" },
        pending: { ...moneyOut, description: "Pending credits − pending debits" },
        available: { ...moneyOut, description: "Posted − pending debits: what can still be spent" },
      },
    },
  },
} as const;

export const entryPage = {
  type: "object",
  required: ["items", "nextCursor"],
  additionalProperties: false,
  properties: {
    items: {
      type: "array",
      items: {
        type: "object",
        required: ["id", "transferId", "direction", "amountMinor", "currency"],
        additionalProperties: false,
        properties: {
          id: idOut,
          transferId: idOut,
          direction: { type: "string", enum: ["D", "C"], description: "Debit or credit" },
          amountMinor: moneyOut,
          currency: { type: "string" },
        },
      },
    },
    nextCursor: { anyOf: [{ type: "string" }, { type: "null" }], description: "null on the last page" },
  },
} as const;

export const transferView = {
  type: "object",
  required: [
    "id",
    "status",
    "debitAccountId",
    "creditAccountId",
    "amountMinor",
    "currency",
    "timeoutS",
    "expiresAt",
    "metadata",
    "createdAt",
  ],
  additionalProperties: false,
  properties: {
    id: { ...idOut, description: "The ledger transaction id (the path of post and void)" },
    status: { type: "string", enum: ["pending", "posted", "voided"] },
    debitAccountId: idOut,
    creditAccountId: idOut,
    amountMinor: moneyOut,
    currency: { type: "string" },
    timeoutS: { anyOf: [{ type: "integer" }, { type: "null" }] },
    expiresAt: nullableInstant,
    metadata: { type: "object", additionalProperties: true },
    createdAt: instantOut,
  },
} as const;

/** A single transfer's success: `ok` (201) or `exists` (200, the original). */
export const transferAnswer = {
  type: "object",
  required: ["result", "transfer"],
  additionalProperties: false,
  properties: {
    result: { type: "string", enum: ["ok", "exists"] },
    transfer: transferView,
  },
} as const;

export const batchAnswer = {
  type: "object",
  required: ["results"],
  additionalProperties: false,
  properties: {
    results: {
      type: "array",
      description: "One per transfer, in order",
      items: {
        type: "object",
        required: ["index", "result"],
        additionalProperties: false,
        properties: {
          index: { type: "integer" },
          result: { type: "string", enum: [...TRANSFER_RESULT_CODES, "write_failed"] },
          transfer: {
            ...transferView,
            description: "With ok, exists and exists_with_different_*: the transfer the key holds",
          },
          accountId: { ...idOut, description: "account_not_found, currency_mismatch: the account at fault" },
          accountIds: { type: "array", items: idOut, description: "exceeds_credits: the accounts short" },
        },
      },
    },
  },
} as const;

/**
 * JSON schemas of the simulator's API. Money travels as an integer string (or a
 * safe integer number on input) of minor units: JSON numbers lose precision past
 * 2^53 and the ledger keeps bigint cents (PY-07). Every object refuses unknown
 * fields, so a typo gets a 400 naming it.
 *
 * @example
 * app.post("/v1/authorizations", { schema: { body: authorizeBody, response: { 200: authorizationResult } } }, h);
 */
import { numberKnob } from "@casebook/infra/http/simulator";
import { ISO_4217_MINOR_UNITS } from "@casebook/kit/iso-4217";
import { behaviourBounds } from "./acquirer-behaviour.ts";

/** At most 18 digits: every value fits PostgreSQL's int8 (bigint). */
export const amountMinorSchema = {
  // anyOf rather than a type list: ajv's strict mode warns on union types.
  anyOf: [
    { type: "string", pattern: "^[1-9][0-9]{0,17}$" },
    { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  ],
  description: "Amount in minor units (cents), > 0: an integer string, or a safe integer",
} as const;

export const idempotencyKeySchema = {
  type: "string",
  minLength: 1,
  maxLength: 255,
  pattern: "^[A-Za-z0-9._:-]+$",
} as const;

const idSchema = { type: "string", minLength: 1, maxLength: 64, pattern: "^[A-Za-z0-9_-]+$" } as const;
// An acquirer refuses a currency it cannot settle: the active ISO 4217 codes with a minor unit.
const currencySchema = {
  type: "string",
  enum: Object.keys(ISO_4217_MINOR_UNITS),
  description: "ISO 4217 code with a minor unit",
} as const;
const moneyOut = { type: "string", pattern: "^[0-9]+$" } as const;
const instantOut = { type: "string", format: "date-time" } as const;
const nullableInstant = { type: ["string", "null"] } as const;

export const authorizeBody = {
  type: "object",
  required: ["idempotencyKey", "merchantId", "amountMinor", "currency", "cardToken"],
  additionalProperties: false,
  properties: {
    idempotencyKey: idempotencyKeySchema,
    merchantId: idSchema,
    amountMinor: amountMinorSchema,
    currency: currencySchema,
    cardToken: { type: "string", minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9_-]+$" },
  },
} as const;

export const captureBody = {
  type: "object",
  additionalProperties: false,
  properties: { amountMinor: amountMinorSchema },
} as const;

export const refundBody = {
  type: "object",
  required: ["idempotencyKey", "amountMinor"],
  additionalProperties: false,
  properties: { idempotencyKey: idempotencyKeySchema, amountMinor: amountMinorSchema },
} as const;

export const authorizationIdParams = {
  type: "object",
  required: ["id"],
  properties: { id: idSchema },
} as const;

export const keyParams = {
  type: "object",
  required: ["key"],
  properties: { key: idempotencyKeySchema },
} as const;

export const dateParams = {
  type: "object",
  required: ["date"],
  properties: { date: { type: "string", pattern: "^[0-9]{4}-[0-9]{2}-[0-9]{2}$" } },
} as const;

/** What POST /v1/authorizations answers, identical on every call with the same key. */
export const authorizationResult = {
  type: "object",
  required: ["id", "idempotencyKey", "merchantId", "amountMinor", "currency", "outcome", "authorizedAt"],
  properties: {
    id: { type: "string" },
    idempotencyKey: { type: "string" },
    merchantId: { type: "string" },
    amountMinor: moneyOut,
    currency: { type: "string" },
    outcome: { type: "string", enum: ["approved", "declined"] },
    declineReason: { type: ["string", "null"] },
    authorizedAt: instantOut,
  },
} as const;

export const refundResult = {
  type: "object",
  required: ["id", "authorizationId", "idempotencyKey", "amountMinor", "currency", "refundedAt"],
  properties: {
    id: { type: "string" },
    authorizationId: { type: "string" },
    idempotencyKey: { type: "string" },
    amountMinor: moneyOut,
    currency: { type: "string" },
    refundedAt: instantOut,
  },
} as const;

/** The full current state of an authorization: the status query of PY-06. */
export const authorizationView = {
  type: "object",
  required: [
    ...authorizationResult.required,
    "status",
    "capturedMinor",
    "refundedMinor",
    "refunds",
    "attempts",
  ],
  properties: {
    ...authorizationResult.properties,
    status: { type: "string", enum: ["approved", "declined", "captured", "voided"] },
    capturedMinor: moneyOut,
    capturedAt: nullableInstant,
    voidedAt: nullableInstant,
    refundedMinor: moneyOut,
    refunds: {
      type: "array",
      items: {
        type: "object",
        properties: { ...refundResult.properties, attempts: { type: "integer" } },
      },
    },
    attempts: { type: "integer", description: "Authorization calls made with this key (1 = no retry)" },
  },
} as const;

export const behaviourSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    latencyMs: numberKnob(behaviourBounds.latencyMs, true),
    latencyJitterMs: numberKnob(behaviourBounds.latencyJitterMs, true),
    declineRate: numberKnob(behaviourBounds.declineRate, false),
    errorRate: numberKnob(behaviourBounds.errorRate, false),
    timeoutAfterChargeRate: numberKnob(behaviourBounds.timeoutAfterChargeRate, false),
    timeoutMode: { type: "string", enum: ["hang", "reset"] },
    hangMs: numberKnob(behaviourBounds.hangMs, true),
    outage: { type: "boolean" },
    outageMode: { type: "string", enum: ["refuse", "reset"] },
    merchantRatePerS: numberKnob(behaviourBounds.merchantRatePerS, true),
    feeBps: numberKnob(behaviourBounds.feeBps, true),
  },
} as const;

/** Bound per kind of injected difference: a test needs a handful, not millions. */
export const maxDifferencesPerKind = 1_000;

export const differencesBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    dropRows: { type: "integer", minimum: 0, maximum: maxDifferencesPerKind, default: 0 },
    changeAmounts: { type: "integer", minimum: 0, maximum: maxDifferencesPerKind, default: 0 },
    unknownRows: { type: "integer", minimum: 0, maximum: maxDifferencesPerKind, default: 0 },
  },
} as const;

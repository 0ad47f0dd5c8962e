/**
 * JSON schemas of the payment and refund routes, for ajv at the edge, /openapi.json and Fastify's
 * response serializer — which writes only the properties declared here, so each view is declared in
 * full (`paymentView`, `refundView` in the store). Request bodies are validated by the shared edge's
 * ajv (nothing coerced: `"true"` is not a boolean, `12.5` not an amount) with every error of the
 * body reported (`everyFieldBody` in payment-request.ts), so the 400 stays PAYMENTS_PAYMENT_INVALID
 * naming every bad field at once; the handlers add what a schema cannot say (an active currency,
 * an amount past 2^53's bound). An amount is an integer string or a safe JSON integer.
 *
 * @example
 * app.get("/v1/payments/:id", { schema: { security: bearerSecurity, response: { 200: paymentViewSchema } } }, h);
 */
import { MAX_AMOUNT_MINOR } from "../domain/ledger.ts";
import { PAYMENT_STATUSES } from "../domain/payment-saga.ts";
import { PAYMENT_ID_PATTERN, REFUND_ID_PATTERN } from "../domain/public-ids.ts";

const moneyOut = {
  type: "string",
  pattern: "^[0-9]+$",
  description: "Minor units (cents), as a string",
} as const;
/** Public ids (domain/public-ids.ts): `pay_…`/`re_…`, or the decimal id of a row made before 013. */
const paymentIdOut = { type: "string", pattern: PAYMENT_ID_PATTERN } as const;
const refundIdOut = { type: "string", pattern: REFUND_ID_PATTERN } as const;
const nullableText = { type: ["string", "null"] } as const;

const amountIn = {
  anyOf: [
    { type: "string", pattern: "^[1-9][0-9]{0,17}$" },
    { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
  ],
  description: `Minor units, 1..${MAX_AMOUNT_MINOR}: an integer string (exact past 2^53) or a safe JSON integer`,
} as const;

export const paymentViewSchema = {
  type: "object",
  required: [
    "id",
    "status",
    "amountMinor",
    "currency",
    "capture",
    "capturedMinor",
    "refundedMinor",
    "acquirerAuthorizationId",
    "declineReason",
    "failure",
    "createdAt",
  ],
  additionalProperties: false,
  properties: {
    id: paymentIdOut,
    status: { type: "string", enum: PAYMENT_STATUSES },
    amountMinor: moneyOut,
    currency: { type: "string", description: "ISO 4217" },
    capture: { type: "boolean", description: "false: authorize only; capture later" },
    capturedMinor: moneyOut,
    refundedMinor: moneyOut,
    acquirerAuthorizationId: nullableText,
    declineReason: nullableText,
    failure: { ...nullableText, description: "Why the payment failed, when it did" },
    createdAt: { type: "string", format: "date-time" },
  },
} as const;

export const refundViewSchema = {
  type: "object",
  required: ["id", "paymentId", "status", "amountMinor", "acquirerRefundId", "failure", "createdAt"],
  additionalProperties: false,
  properties: {
    id: refundIdOut,
    paymentId: paymentIdOut,
    status: { type: "string", enum: ["pending", "succeeded", "failed", "unresolved"] },
    amountMinor: moneyOut,
    acquirerRefundId: nullableText,
    failure: nullableText,
    createdAt: { type: "string", format: "date-time" },
  },
} as const;

export const paymentBody = {
  type: "object",
  required: ["amountMinor", "currency", "cardToken"],
  additionalProperties: false,
  properties: {
    amountMinor: amountIn,
    currency: { type: "string", pattern: "^[A-Z]{3}$", description: "ISO 4217 (BRL)" },
    cardToken: { type: "string", pattern: "^[A-Za-z0-9_-]{1,128}$" },
    capture: { type: "boolean", default: true, description: "false: authorize only (capture or void later)" },
  },
} as const;

export const captureBody = {
  type: "object",
  additionalProperties: false,
  description:
    "Empty or {} captures all of the authorization; amountMinor a part of it (the rest is released)",
  properties: { amountMinor: amountIn },
} as const;

export const refundBody = {
  type: "object",
  required: ["amountMinor"],
  additionalProperties: false,
  properties: { amountMinor: amountIn },
} as const;

/** The codes of an Idempotency-Key claim: a retry in flight, a reused key, a claim taken over. */
export const idempotencyCodes = [
  "PAYMENTS_IDEMPOTENCY_IN_PROGRESS",
  "PAYMENTS_IDEMPOTENCY_MISMATCH",
  "PAYMENTS_IDEMPOTENCY_LOCK_LOST",
] as const;

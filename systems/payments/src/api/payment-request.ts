import { everyErrorValidatorCompiler } from "@casebook/infra/http/body-validation";
import {
  idempotencyKeyOf as headerIdempotencyKey,
  idempotencyKeyHeaders,
} from "@casebook/infra/http/idempotency-key";
import { fieldErrors, maxFieldErrors } from "@casebook/infra/http/problem";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyRequest } from "fastify";
import type { AcquirerClient } from "../clients/acquirer-client.ts";
import { MAX_AMOUNT_MINOR } from "../domain/ledger.ts";
import { isPaymentId } from "../domain/public-ids.ts";
import { paymentErrors } from "../errors.ts";
import type { PaymentCreateGroup } from "../store/payment-create-group.ts";
import { findPaymentByPublicId, type Payment } from "../store/payment-repository.ts";
import type { SagaOrchestrator } from "../workers/saga-orchestrator.ts";

export type BreakerOpenMode = "accept" | "fail-fast";

export interface PaymentRoutesConfig {
  /** How long POST drives the saga before answering 202 pending; 0 answers 202 at once. */
  inlineDriveMs: number;
  /** PY-12: while the acquirer breaker is open, 202 pending ("accept") or 503 ("fail-fast"). */
  breakerOpenMode: BreakerOpenMode;
  /** How long a refund left pending by its request waits before the retry worker takes it. Default 5000. */
  refundRetryAfterMs?: number;
}

export interface PaymentRouteDeps {
  db: Database;
  idempotency: IdempotencyStore;
  orchestrator: SagaOrchestrator;
  acquirer: AcquirerClient;
  clock: Clock;
  /** The authenticated merchant of the request (the auth helper's hook sets it). */
  merchantOf(request: FastifyRequest): string;
  config: PaymentRoutesConfig;
  /** New payments group-committed (store/payment-create-group.ts); without it each POST creates alone. */
  creates?: PaymentCreateGroup;
}

export interface FieldError {
  field: string;
  message: string;
}

/**
 * Route options of a write whose body the edge validates by its JSON schema (ajv, nothing coerced),
 * naming every bad field at once; the handler reads the verdict with `checkedBody`.
 */
export const everyFieldBody = {
  attachValidation: true,
  validatorCompiler: everyErrorValidatorCompiler,
} as const;

/** What a schema cannot say about an amount it let through: the bound, past 2^53 as a string. */
export function amountBoundProblem(raw: unknown, field: string): FieldError | undefined {
  const valid = (typeof raw === "string" && /^[0-9]{1,18}$/.test(raw)) || Number.isSafeInteger(raw);
  if (!valid || BigInt(raw as string | number) <= MAX_AMOUNT_MINOR) return undefined;
  return { field, message: `must be an integer amount of minor units in 1..${MAX_AMOUNT_MINOR}` };
}

/**
 * The request's body when it is valid; else PAYMENTS_PAYMENT_INVALID naming every bad field: the
 * edge's (the first words ajv gave for each field) and `checks` of what a schema cannot say (an
 * active currency, an amount's bound), whose words win for a field both name. A failure of
 * another part (a header) is thrown as the edge would have: 400 REQUEST_INVALID.
 */
export function checkedBody(
  request: FastifyRequest,
  checks: (body: Record<string, unknown>) => (FieldError | undefined)[],
): Record<string, unknown> {
  const failure = request.validationError;
  if (failure !== undefined && failure.validationContext !== "body") throw failure;
  const body = request.body;
  const object = typeof body === "object" && body !== null && !Array.isArray(body);
  const byField = new Map<string, string>();
  if (failure !== undefined)
    for (const { field, message } of fieldErrors(failure))
      if (!byField.has(field)) byField.set(field, message);
  for (const problem of object ? checks(body as Record<string, unknown>) : [])
    if (problem !== undefined) byField.set(problem.field, problem.message);
  if (byField.size === 0) return body as Record<string, unknown>;
  const errors = [...byField].slice(0, maxFieldErrors).map(([field, message]) => ({ field, message }));
  throw paymentErrors.create("PAYMENTS_PAYMENT_INVALID", { fields: { errors } });
}

/** The Idempotency-Key a route requires: PAYMENTS_IDEMPOTENCY_KEY_MISSING without one. */
export function idempotencyKeyOf(request: FastifyRequest): string {
  const key = optionalIdempotencyKeyOf(request);
  if (key === undefined) throw paymentErrors.create("PAYMENTS_IDEMPOTENCY_KEY_MISSING");
  return key;
}

/**
 * The Idempotency-Key header when sent, else undefined; a bad one is 400 REQUEST_INVALID naming
 * `/headers/idempotency-key` (the one rule, infra/http/idempotency-key). Keys of any visible ASCII
 * reach the acquirer through domain/derived-keys.ts, which keeps them in its charset and bound.
 */
export function optionalIdempotencyKeyOf(request: FastifyRequest): string | undefined {
  return headerIdempotencyKey(request.headers);
}

/** The headers of a route that takes an Idempotency-Key: ajv refuses a bad key before the handler. */
export const keyedHeaders = {
  type: "object",
  properties: { ...idempotencyKeyHeaders() },
} as const;

/** The route's `{id}`: a payment's public id (domain/public-ids.ts); any other shape is a 404 like an unknown id. */
export function paymentIdOf(request: FastifyRequest): string {
  const raw = (request.params as { id?: string }).id ?? "";
  if (!isPaymentId(raw)) throw paymentErrors.create("PAYMENTS_PAYMENT_NOT_FOUND", { fields: { id: raw } });
  return raw;
}

/** The route's payment, scoped to the request's merchant: another merchant's id is a 404 like an unknown one. */
export async function routePayment(
  deps: PaymentRouteDeps,
  merchantId: string,
  publicId: string,
): Promise<Payment> {
  const payment = await findPaymentByPublicId(deps.db, merchantId, publicId);
  if (payment === undefined)
    throw paymentErrors.create("PAYMENTS_PAYMENT_NOT_FOUND", { fields: { id: publicId } });
  return payment;
}

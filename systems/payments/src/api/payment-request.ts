import {
  idempotencyKeyOf as headerIdempotencyKey,
  idempotencyKeyHeaders,
} from "@casebook/infra/http/idempotency-key";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyRequest } from "fastify";
import type { AcquirerClient } from "../clients/acquirer-client.ts";
import { MAX_AMOUNT_MINOR } from "../domain/ledger.ts";
import { isPaymentId } from "../domain/public-ids.ts";
import { paymentErrors } from "../errors.ts";
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
}

export interface FieldError {
  field: string;
  message: string;
}

export function parseAmount(raw: unknown, field: string, errors: FieldError[]): bigint {
  const text = typeof raw === "number" && Number.isSafeInteger(raw) ? String(raw) : raw;
  if (typeof text !== "string" || !/^[1-9][0-9]{0,17}$/.test(text) || BigInt(text) > MAX_AMOUNT_MINOR) {
    errors.push({ field, message: `must be an integer amount of minor units in 1..${MAX_AMOUNT_MINOR}` });
    return 0n;
  }
  return BigInt(text);
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

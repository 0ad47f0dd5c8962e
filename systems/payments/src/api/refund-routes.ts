/**
 * POST /v1/payments/{id}/refunds (PY-15, PY-16): a partial refund with its own Idempotency-Key.
 * The refund row (reserving its amount, leased by this request) commits first with the
 * idempotency step; then the acquirer call, with the refund's own key on every try; then the
 * ledger reversal, the refund's status and the stored response in one transaction.
 *
 * An unknown outcome answers 202: the refund's lease is given back and the key unlocked, so either
 * the client's retry (same key) resumes it at once or, past `refundRetryAfterMs`, the refund retry
 * worker (workers/refund-retrier.ts) does — whoever holds the row's lease calls the acquirer, and
 * the acquirer, seeing the same refund key, refunds at most once. A retry that finds the refund
 * settled by the worker answers (and stores) its final response.
 *
 * Correlation (PY-17): every log line of the request and every acquirer call carries the refund's
 * acquirer key as `correlationId`.
 *
 * @example
 * registerRefundRoutes(service.app, deps); // POST …/refunds and GET …/refunds/{refundId}
 */

import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import { sendStoredResponse } from "@casebook/infra/http/idempotency-key";
import { beginClaim, releaseAfterFailure } from "@casebook/infra/sql/idempotency-claim-release";
import type { IdempotencyLease } from "@casebook/infra/sql/idempotency-store";
import { fingerprintRequest, type StoredResponse } from "@casebook/kit/idempotency";
import { RENEWALS_PER_LEASE, whileRenewing } from "@casebook/kit/lease-renewal";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { RefundOutcome } from "../clients/acquirer-client.ts";
import { refundAcquirerKey } from "../domain/derived-keys.ts";
import { isRefundId } from "../domain/public-ids.ts";
import { paymentErrors } from "../errors.ts";
import { lockPayment, type Payment } from "../store/payment-repository.ts";
import {
  claimRefund,
  completeRefund,
  createRefund,
  failRefund,
  findRefund,
  findRefundByKey,
  postponeRefund,
  type Refund,
  refundView,
} from "../store/refund-repository.ts";
import {
  amountBoundProblem,
  checkedBody,
  everyFieldBody,
  idempotencyKeyOf,
  keyedHeaders,
  type PaymentRouteDeps,
  paymentIdOf,
  routePayment,
} from "./payment-request.ts";
import { idempotencyCodes, refundBody, refundViewSchema } from "./payment-schemas.ts";

/** Default wait before the retry worker may take over a refund its request left pending. */
export const DEFAULT_REFUND_RETRY_AFTER_MS = 5_000;

/** A refund body the edge's schema (`refundBody`) passed, its amount within the bound. */
function refundAmountOf(request: FastifyRequest): bigint {
  const body = checkedBody(request, (b) => [amountBoundProblem(b.amountMinor, "/body/amountMinor")]);
  return BigInt(body.amountMinor as string | number);
}

function jsonResponse(status: number, body: unknown): StoredResponse {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
    body: new TextEncoder().encode(JSON.stringify(body)),
  };
}

/** The final answer of a settled refund, the same bytes whoever settled it (request or worker). */
function settledResponse(refund: Refund, payment: Payment): StoredResponse {
  return jsonResponse(refund.status === "succeeded" ? 201 : 422, refundView(refund, payment.publicId));
}

/** The lease owner of refunds driven by requests: distinct from the process's retry worker. */
function requestOwner(deps: PaymentRouteDeps): string {
  return `${deps.orchestrator.owner}:api`;
}

async function openRefund(
  deps: PaymentRouteDeps,
  merchantId: string,
  paymentId: bigint,
  key: string,
  amountMinor: bigint,
  lease: IdempotencyLease,
  log: FastifyBaseLogger,
): Promise<{ refund: Refund; created: boolean }> {
  if (lease.recoveryPoint !== "started") {
    const existing = await findRefundByKey(deps.db, merchantId, key);
    if (existing !== undefined) return { refund: existing, created: false };
  }
  try {
    const refund = await deps.db.transaction(async (tx) => {
      const payment = await lockPayment(tx, merchantId, paymentId);
      const nowMs = deps.clock.nowMs();
      const created = await createRefund(tx, payment, {
        idempotencyKey: key,
        amountMinor,
        idemGeneration: lease.generation,
        nowMs,
        leaseOwner: requestOwner(deps),
        leaseMs: deps.orchestrator.unrenewedLeaseMs,
        retryAfterMs: deps.config.refundRetryAfterMs ?? DEFAULT_REFUND_RETRY_AFTER_MS,
      });
      await deps.idempotency.advance(tx, lease, "refund_pending");
      return created;
    });
    return { refund, created: true };
  } catch (error) {
    await releaseAfterFailure(deps.idempotency, deps.db, lease, log);
    throw error;
  }
}

/** Not finished here: the key is unlocked (a retry resumes) and 202 says where the refund stands. */
async function answerPending(
  deps: PaymentRouteDeps,
  reply: FastifyReply,
  lease: IdempotencyLease,
  payment: Payment,
  refund: Refund,
) {
  await deps.idempotency.release(deps.db, lease);
  return reply.code(202).send(refundView(refund, payment.publicId));
}

/** Stores and sends the final response of a refund already settled (by this request or the worker). */
async function answerSettled(
  deps: PaymentRouteDeps,
  reply: FastifyReply,
  lease: IdempotencyLease,
  payment: Payment,
  refund: Refund,
) {
  // Unresolved is final for the worker but not an answer: the D+1 file decides; keep the key open.
  if (refund.status === "unresolved" || refund.status === "pending")
    return answerPending(deps, reply, lease, payment, refund);
  const response = settledResponse(refund, payment);
  await deps.db.transaction((tx) => deps.idempotency.complete(tx, lease, response));
  return sendStoredResponse(reply, response);
}

/** Books the acquirer's definitive answer; LEASE_LOST (a worker took the refund over) answers 202. */
async function settle(
  deps: PaymentRouteDeps,
  reply: FastifyReply,
  lease: IdempotencyLease,
  routed: Payment,
  refund: Refund,
  outcome: Extract<RefundOutcome, { kind: "refunded" | "rejected" }>,
) {
  const owner = requestOwner(deps);
  try {
    const response = await deps.db.transaction(async (tx) => {
      const payment = await lockPayment(tx, refund.merchantId, refund.paymentId);
      const nowMs = deps.clock.nowMs();
      const done =
        outcome.kind === "refunded"
          ? await completeRefund(tx, refund, payment, { acquirerRefundId: outcome.refundId, nowMs, owner })
          : await failRefund(tx, refund, { failure: `acquirer refused: ${outcome.code}`, nowMs, owner });
      const stored = settledResponse(done, payment);
      await deps.idempotency.complete(tx, lease, stored);
      return stored;
    });
    return sendStoredResponse(reply, response);
  } catch (error) {
    if (!paymentErrors.is(error, "PAYMENTS_REFUND_LEASE_LOST")) throw error;
    return answerPending(deps, reply, lease, routed, refund);
  }
}

/** Calls the acquirer for a refund this request holds, then settles or postpones it. */
async function drive(
  deps: PaymentRouteDeps,
  reply: FastifyReply,
  lease: IdempotencyLease,
  payment: Payment,
  refund: Refund,
) {
  // The key's lease is short (PAYMENTS_CLAIM_LEASE_MS): renewed while the call runs, so a retry waits for it.
  const renewal = {
    everyMs: deps.idempotency.leaseMs / RENEWALS_PER_LEASE,
    renew: () => deps.idempotency.renew(deps.db, lease),
  };
  const outcome = await whileRenewing(renewal, () =>
    deps.acquirer.refund(payment.authorizationId ?? "", {
      idempotencyKey: refund.acquirerKey,
      amountMinor: refund.amountMinor,
      correlationId: refund.acquirerKey,
    }),
  );
  if (outcome.kind === "refunded" || outcome.kind === "rejected")
    return settle(deps, reply, lease, payment, refund, outcome);
  const nowMs = deps.clock.nowMs();
  const retryAfterMs = deps.config.refundRetryAfterMs ?? DEFAULT_REFUND_RETRY_AFTER_MS;
  const postponed = await postponeRefund(deps.db, refund, {
    attempts: refund.attempts,
    nextAttemptAtMs: nowMs + retryAfterMs,
    nowMs,
    owner: requestOwner(deps),
  }).catch((error: unknown) => {
    if (paymentErrors.is(error, "PAYMENTS_REFUND_LEASE_LOST")) return refund;
    throw error;
  });
  return answerPending(deps, reply, lease, payment, postponed);
}

export async function handleRefund(deps: PaymentRouteDeps, request: FastifyRequest, reply: FastifyReply) {
  const merchantId = deps.merchantOf(request);
  const publicId = paymentIdOf(request);
  const key = idempotencyKeyOf(request);
  const amountMinor = refundAmountOf(request);
  const payment = await routePayment(deps, merchantId, publicId);
  // PY-17: the refund's acquirer key is its correlation id, on the request's lines too.
  const log = request.log.child({ correlationId: refundAcquirerKey(payment.acquirerKey, key) });
  request.log = log;
  reply.log = log;
  const fingerprint = fingerprintRequest({
    method: "POST",
    path: `/v1/payments/${payment.publicId}/refunds`,
    body: { amountMinor: amountMinor.toString() },
  });
  const claim = { scope: merchantId, key, fingerprint, nowMs: deps.clock.nowMs() };
  const begun = await beginClaim(deps.idempotency, deps.db, claim, log);
  if (begun.kind === "replay") return sendStoredResponse(reply, begun.response);
  const opened = await openRefund(deps, merchantId, payment.id, key, amountMinor, begun.lease, log);
  const lease = opened.created ? { ...begun.lease, recoveryPoint: "refund_pending" } : begun.lease;
  if (opened.refund.status !== "pending") return answerSettled(deps, reply, lease, payment, opened.refund);
  const held = opened.created
    ? opened.refund
    : await claimRefund(deps.db, opened.refund.id, {
        owner: requestOwner(deps),
        nowMs: deps.clock.nowMs(),
        leaseMs: deps.orchestrator.unrenewedLeaseMs,
      });
  // The retry worker holds it: it settles the refund; this request only reports where it stands.
  if (held === undefined) return answerPending(deps, reply, lease, payment, opened.refund);
  return drive(deps, reply, lease, payment, held);
}

/**
 * GET /v1/payments/{id}/refunds/{refundId}: one refund, scoped to the merchant — where a 202
 * refund ended (succeeded, failed, or unresolved for the D+1 file to decide).
 */
export async function getRefund(deps: PaymentRouteDeps, request: FastifyRequest, reply: FastifyReply) {
  const merchantId = deps.merchantOf(request);
  const payment = await routePayment(deps, merchantId, paymentIdOf(request));
  const raw = (request.params as { refundId?: string }).refundId ?? "";
  const refund = isRefundId(raw) ? await findRefund(deps.db, merchantId, payment.id, raw) : undefined;
  if (refund === undefined)
    throw paymentErrors.create("PAYMENTS_REFUND_NOT_FOUND", { fields: { refundId: raw } });
  return reply.code(200).send(refundView(refund, payment.publicId));
}

/**
 * Registers the refund routes on `app` (beside registerPaymentRoutes, with the same deps).
 *
 * @example
 * registerRefundRoutes(service.app, deps);
 */
export function registerRefundRoutes(app: FastifyInstance, deps: PaymentRouteDeps): void {
  const tags = ["payments"];
  const security = bearerSecurity;
  const notFound = ["PAYMENTS_PAYMENT_NOT_FOUND"] as const;
  app.post(
    "/v1/payments/:id/refunds",
    {
      ...everyFieldBody,
      schema: {
        summary: "Refund part or all of a captured payment (Idempotency-Key required, PY-15)",
        tags,
        security,
        headers: keyedHeaders,
        body: refundBody,
        errorCodes: [
          "PAYMENTS_PAYMENT_INVALID",
          "PAYMENTS_IDEMPOTENCY_KEY_MISSING",
          ...notFound,
          "PAYMENTS_PAYMENT_STATE_CONFLICT",
          "PAYMENTS_REFUND_EXCEEDS_CAPTURED",
          "PAYMENTS_REFUND_LEASE_LOST",
          ...idempotencyCodes,
        ],
        response: {
          201: { ...refundViewSchema, description: "Refunded" },
          202: {
            ...refundViewSchema,
            description: "Outcome unknown yet: retry with the same key, or GET it",
          },
          422: { ...refundViewSchema, description: "The acquirer refused the refund" },
        },
      },
    },
    (request, reply) => handleRefund(deps, request, reply),
  );
  app.get(
    "/v1/payments/:id/refunds/:refundId",
    {
      schema: {
        summary: "One refund: where a 202 refund ended",
        tags,
        security,
        errorCodes: [...notFound, "PAYMENTS_REFUND_NOT_FOUND"],
        response: { 200: refundViewSchema },
      },
    },
    (request, reply) => getRefund(deps, request, reply),
  );
}

/**
 * POST /v1/payments/{id}/refunds (PY-15, PY-16): a partial refund with its own Idempotency-Key.
 * The refund row (reserving its amount) commits first with the idempotency step; then the
 * acquirer call, with the refund's own key on every try; then the ledger reversal, the refund's
 * status and the stored response in one transaction. An unknown outcome answers 202 and unlocks
 * the key, so the client's retry with the same key resumes it at once — and the acquirer, seeing
 * the same refund key, refunds at most once.
 *
 * @example
 * app.post("/v1/payments/:id/refunds", (request, reply) => handleRefund(deps, request, reply));
 */
import type { FastifyReply, FastifyRequest } from "fastify";
import { fingerprintRequest } from "../domain/idempotency.ts";
import { paymentErrors } from "../domain/payment-errors.ts";
import type { IdempotencyLease } from "../store/idempotency-store.ts";
import { findPayment, lockPayment } from "../store/payment-repository.ts";
import {
  completeRefund,
  createRefund,
  failRefund,
  findRefundByKey,
  type Refund,
  refundView,
} from "../store/refund-repository.ts";
import {
  idempotencyKeyOf,
  type PaymentRouteDeps,
  parseAmount,
  paymentIdOf,
  sendStored,
} from "./payment-routes.ts";

function parseRefundAmount(body: unknown): bigint {
  const errors: { field: string; message: string }[] = [];
  const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (key !== "amountMinor") errors.push({ field: `/body/${key}`, message: "is not a known field" });
  const amount = parseAmount(b.amountMinor, "/body/amountMinor", errors);
  if (errors.length > 0) throw paymentErrors.create("PAYMENTS_PAYMENT_INVALID", { fields: { errors } });
  return amount;
}

function jsonResponse(status: number, body: unknown) {
  return {
    status,
    headers: { "content-type": "application/json; charset=utf-8" },
    body: new TextEncoder().encode(JSON.stringify(body)),
  };
}

async function openRefund(
  deps: PaymentRouteDeps,
  merchantId: string,
  paymentId: bigint,
  key: string,
  amountMinor: bigint,
  lease: IdempotencyLease,
): Promise<Refund> {
  if (lease.recoveryPoint !== "started") {
    const existing = await findRefundByKey(deps.db, merchantId, key);
    if (existing !== undefined) return existing;
  }
  try {
    return await deps.db.transaction(async (tx) => {
      const payment = await lockPayment(tx, merchantId, paymentId);
      const refund = await createRefund(tx, payment, {
        idempotencyKey: key,
        amountMinor,
        idemGeneration: lease.generation,
        nowMs: deps.clock.nowMs(),
      });
      await deps.idempotency.advance(tx, lease, "refund_pending");
      return refund;
    });
  } catch (error) {
    await deps.idempotency.release(deps.db, lease);
    throw error;
  }
}

export async function handleRefund(deps: PaymentRouteDeps, request: FastifyRequest, reply: FastifyReply) {
  const merchantId = deps.merchantOf(request);
  const paymentId = paymentIdOf(request);
  const key = idempotencyKeyOf(request);
  const amountMinor = parseRefundAmount(request.body);
  const payment = await findPayment(deps.db, merchantId, paymentId);
  if (payment === undefined) throw paymentErrors.create("PAYMENTS_PAYMENT_NOT_FOUND");
  const fingerprint = fingerprintRequest({
    method: "POST",
    path: `/v1/payments/${paymentId}/refunds`,
    body: { amountMinor: amountMinor.toString() },
  });
  const begun = await deps.idempotency.begin({ merchantId, key, fingerprint });
  if (begun.kind === "replay") return sendStored(reply, begun.response);
  let lease = begun.lease;
  const refund = await openRefund(deps, merchantId, paymentId, key, amountMinor, lease);
  if (lease.recoveryPoint === "started") lease = { ...lease, recoveryPoint: "refund_pending" };
  const outcome = await deps.acquirer.refund(payment.authorizationId ?? "", {
    idempotencyKey: refund.acquirerKey,
    amountMinor: refund.amountMinor,
  });
  if (outcome.kind === "unknown" || outcome.kind === "unavailable") {
    // Not finished: unlock so the client's retry (same key) resumes at once.
    await deps.idempotency.release(deps.db, lease);
    return reply.code(202).send(refundView(refund));
  }
  const response = await deps.db.transaction(async (tx) => {
    const locked = await lockPayment(tx, merchantId, paymentId);
    const done =
      outcome.kind === "refunded"
        ? await completeRefund(tx, refund, locked, {
            acquirerRefundId: outcome.refundId,
            nowMs: deps.clock.nowMs(),
          })
        : await failRefund(tx, refund, `acquirer refused: ${outcome.code}`, deps.clock.nowMs());
    const stored = jsonResponse(done.status === "succeeded" ? 201 : 422, refundView(done));
    await deps.idempotency.complete(tx, lease, stored);
    return stored;
  });
  return sendStored(reply, response);
}

/**
 * Refunds (PY-15, PY-16): partial, each with its own idempotency key and acquirer call. The
 * refund row reserves its amount on the payment (`refunded_minor`, CHECK ≤ captured) in the
 * transaction that creates it, so concurrent refunds can never exceed the capture; the ledger
 * effect — a reversal of the payment's posted hold, linked by `reverses_id` — is written only
 * once the acquirer confirmed, with the stored response, in one transaction.
 *
 * @example
 * const refund = await db.transaction((tx) => createRefund(tx, payment, { idempotencyKey, amountMinor: 1000n, ... }));
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { paymentErrors } from "../domain/payment-errors.ts";
import { statusAfterRefunds } from "../domain/payment-saga.ts";
import { applyReversal } from "./ledger-repository.ts";
import type { Payment } from "./payment-repository.ts";

export type RefundStatus = "pending" | "succeeded" | "failed";

export interface Refund {
  id: bigint;
  paymentId: bigint;
  merchantId: string;
  idempotencyKey: string;
  acquirerKey: string;
  amountMinor: bigint;
  status: RefundStatus;
  failure: string | null;
  acquirerRefundId: string | null;
  ledgerTransactionId: bigint | null;
  createdAt: Date;
}

interface RefundRow {
  id: bigint;
  payment_id: bigint;
  merchant_id: string;
  idempotency_key: string;
  acquirer_key: string;
  amount_minor: bigint;
  status: RefundStatus;
  failure: string | null;
  acquirer_refund_id: string | null;
  ledger_transaction_id: bigint | null;
  created_at: Date;
}

function toRefund(row: RefundRow): Refund {
  return {
    id: row.id,
    paymentId: row.payment_id,
    merchantId: row.merchant_id,
    idempotencyKey: row.idempotency_key,
    acquirerKey: row.acquirer_key,
    amountMinor: row.amount_minor,
    status: row.status,
    failure: row.failure,
    acquirerRefundId: row.acquirer_refund_id,
    ledgerTransactionId: row.ledger_transaction_id,
    createdAt: row.created_at,
  };
}

export function refundView(r: Refund): Record<string, unknown> {
  return {
    id: r.id.toString(),
    paymentId: r.paymentId.toString(),
    status: r.status,
    amountMinor: r.amountMinor.toString(),
    acquirerRefundId: r.acquirerRefundId,
    failure: r.failure,
    createdAt: r.createdAt.toISOString(),
  };
}

/** Inserts a pending refund and reserves its amount on the locked payment; 409/422 when not allowed. */
export async function createRefund(
  tx: Queryable,
  payment: Payment,
  input: { idempotencyKey: string; amountMinor: bigint; idemGeneration: number; nowMs: number },
): Promise<Refund> {
  if (payment.status !== "captured" && payment.status !== "partially_refunded") {
    throw paymentErrors.create("PAYMENTS_PAYMENT_STATE_CONFLICT", { fields: { status: payment.status } });
  }
  const refundableMinor = payment.capturedMinor - payment.refundedMinor;
  if (input.amountMinor > refundableMinor) {
    throw paymentErrors.create("PAYMENTS_REFUND_EXCEEDS_CAPTURED", {
      fields: { refundableMinor: refundableMinor.toString() },
    });
  }
  await tx.query("UPDATE payments SET refunded_minor = refunded_minor + $2 WHERE id = $1", [
    payment.id,
    input.amountMinor,
  ]);
  const now = new Date(input.nowMs);
  const { rows } = await tx.query<RefundRow>(
    `INSERT INTO payment_refunds (payment_id, merchant_id, idempotency_key, acquirer_key, amount_minor, status,
       next_run_at, idem_generation, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $6, $6) RETURNING *`,
    [
      payment.id,
      payment.merchantId,
      input.idempotencyKey,
      `${payment.acquirerKey}:refund:${input.idempotencyKey}`,
      input.amountMinor,
      now,
      input.idemGeneration,
    ],
  );
  return toRefund(rows[0]!);
}

export async function findRefundByKey(
  q: Queryable,
  merchantId: string,
  key: string,
): Promise<Refund | undefined> {
  const { rows } = await q.query<RefundRow>(
    "SELECT * FROM payment_refunds WHERE merchant_id = $1 AND idempotency_key = $2",
    [merchantId, key],
  );
  return rows[0] === undefined ? undefined : toRefund(rows[0]);
}

/**
 * The acquirer confirmed the refund: the ledger reversal of the posted hold (`pay:<id>:refund:<key>`,
 * PY-15), the refund row and the payment's status, in `tx`. Idempotent: a succeeded refund is returned as is.
 */
export async function completeRefund(
  tx: Queryable,
  refund: Refund,
  payment: Payment,
  input: { acquirerRefundId: string; nowMs: number },
): Promise<Refund> {
  if (refund.status === "succeeded") return refund;
  const reversal = await applyReversal(tx, payment.holdTransactionId, {
    idemKey: `pay:${payment.id}:refund:${refund.idempotencyKey}`,
    amount: refund.amountMinor,
    metadata: { paymentId: payment.id.toString(), refundId: refund.id.toString() },
  });
  const now = new Date(input.nowMs);
  const { rows } = await tx.query<RefundRow>(
    `UPDATE payment_refunds SET status = 'succeeded', acquirer_refund_id = $2, ledger_transaction_id = $3,
        updated_at = $4 WHERE id = $1 RETURNING *`,
    [refund.id, input.acquirerRefundId, reversal.transaction.id, now],
  );
  const { rows: sums } = await tx.query<{ refunded: bigint }>(
    "SELECT COALESCE(sum(amount_minor), 0)::int8 AS refunded FROM payment_refunds WHERE payment_id = $1 AND status = 'succeeded'",
    [payment.id],
  );
  await tx.query("UPDATE payments SET status = $2, updated_at = $3 WHERE id = $1", [
    payment.id,
    statusAfterRefunds(payment.capturedMinor, sums[0]!.refunded),
    now,
  ]);
  return toRefund(rows[0]!);
}

/** The acquirer refused the refund for good: release its reserved amount. */
export async function failRefund(
  tx: Queryable,
  refund: Refund,
  failure: string,
  nowMs: number,
): Promise<Refund> {
  const { rows } = await tx.query<RefundRow>(
    "UPDATE payment_refunds SET status = 'failed', failure = $2, updated_at = $3 WHERE id = $1 AND status = 'pending' RETURNING *",
    [refund.id, failure, new Date(nowMs)],
  );
  if (rows[0] === undefined) return refund;
  await tx.query("UPDATE payments SET refunded_minor = refunded_minor - $2 WHERE id = $1", [
    refund.paymentId,
    refund.amountMinor,
  ]);
  return toRefund(rows[0]);
}

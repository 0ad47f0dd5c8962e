/**
 * Refunds (PY-15, PY-16): partial, each with its own idempotency key and acquirer call. The
 * refund row reserves its amount on the payment (`refunded_minor`, CHECK ≤ captured) in the
 * transaction that creates it, so concurrent refunds can never exceed the capture; the ledger
 * effect — a reversal of the payment's posted capture, linked by `reverses_id` — is written only
 * once the acquirer confirmed.
 *
 * Who may call the acquirer for a pending refund is decided by a lease on its row, the way sagas
 * are claimed (payment-repository.ts): the API request that created it holds the lease during its
 * call; a refund left pending past `next_attempt_at` is claimed by a retry worker with `FOR UPDATE
 * SKIP LOCKED` + lease expiry (`refundQueue`, infra lease-queue.ts); every later write is a
 * compare-and-set on (lease_version, owner, pending),
 * so of two claimers only the current owner can settle it, and a settled refund never changes.
 *
 * Statuses: pending → succeeded (reversal booked) | failed (definitive refusal: the reservation is
 * released) | unresolved (the retry bound ran out with the outcome unknown: the reservation stays,
 * the D+1 settlement file decides).
 *
 * @example
 * const refund = await db.transaction((tx) => createRefund(tx, payment, { idempotencyKey, amountMinor: 1000n, ... }));
 * const due = await claimDueRefunds(db, { owner: "w1", nowMs, leaseMs: 30_000, maxBatch: 8 });
 */
import { type Fragment, LeaseQueue } from "@casebook/infra/sql/lease-queue";
import type { Queryable } from "@casebook/infra/sql/sql";
import { refundAcquirerKey, refundLedgerKey } from "../domain/derived-keys.ts";
import { stateConflict } from "../domain/payment-actions.ts";
import { statusAfterRefunds } from "../domain/payment-saga.ts";
import { paymentErrors } from "../errors.ts";
import { applyReversal } from "./ledger-repository.ts";
import { MIN_LEASE_MS, type Payment } from "./payment-repository.ts";

export type RefundStatus = "pending" | "succeeded" | "failed" | "unresolved";

export interface Refund {
  /** Internal, like its payment's (public-ids.ts). */
  id: bigint;
  /** What the API shows and routes take: `re_…`, or the old decimal id of a refund from before 013. */
  publicId: string;
  /** The payment's internal id. */
  paymentId: bigint;
  merchantId: string;
  idempotencyKey: string;
  acquirerKey: string;
  amountMinor: bigint;
  status: RefundStatus;
  failure: string | null;
  /** Retry-worker rounds spent on it (the backoff exponent). */
  attempts: number;
  nextAttemptAt: Date;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** Bumped by every claim and write: the fence of the compare-and-set (lease-queue.ts). */
  leaseVersion: bigint;
  acquirerRefundId: string | null;
  ledgerTransactionId: bigint | null;
  createdAt: Date;
  updatedAt: Date;
}

interface RefundRow {
  id: bigint;
  public_id: string;
  payment_id: bigint;
  merchant_id: string;
  idempotency_key: string;
  acquirer_key: string;
  amount_minor: bigint;
  status: RefundStatus;
  failure: string | null;
  attempts: number;
  next_attempt_at: Date;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  lease_version: bigint;
  acquirer_refund_id: string | null;
  ledger_transaction_id: bigint | null;
  created_at: Date;
  updated_at: Date;
}

function toRefund(row: RefundRow): Refund {
  return {
    id: row.id,
    publicId: row.public_id,
    paymentId: row.payment_id,
    merchantId: row.merchant_id,
    idempotencyKey: row.idempotency_key,
    acquirerKey: row.acquirer_key,
    amountMinor: row.amount_minor,
    status: row.status,
    failure: row.failure,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: row.lease_expires_at,
    leaseVersion: row.lease_version,
    acquirerRefundId: row.acquirer_refund_id,
    ledgerTransactionId: row.ledger_transaction_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** What the API answers for a refund of the payment whose public id is `paymentPublicId`. */
export function refundView(r: Refund, paymentPublicId: string): Record<string, unknown> {
  return {
    id: r.publicId,
    paymentId: paymentPublicId,
    status: r.status,
    amountMinor: r.amountMinor.toString(),
    acquirerRefundId: r.acquirerRefundId,
    failure: r.failure,
    createdAt: r.createdAt.toISOString(),
  };
}

export interface CreateRefundInput {
  idempotencyKey: string;
  amountMinor: bigint;
  idemGeneration: number;
  nowMs: number;
  /** The creator holds the row's lease for its own acquirer call. */
  leaseOwner: string;
  leaseMs: number;
  /** From now until the retry worker may take the refund over if it is still pending. */
  retryAfterMs: number;
}

/** Inserts a pending, leased refund and reserves its amount on the locked payment; 409/422 when not allowed. */
export async function createRefund(
  tx: Queryable,
  payment: Payment,
  input: CreateRefundInput,
): Promise<Refund> {
  if (payment.status !== "captured" && payment.status !== "partially_refunded") {
    throw stateConflict(payment, "refund");
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
  const { rows } = await tx.query<RefundRow>(
    `INSERT INTO payment_refunds (payment_id, merchant_id, idempotency_key, acquirer_key, amount_minor, status,
       next_attempt_at, lease_owner, lease_expires_at, idem_generation, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $9, $10, $10) RETURNING *`,
    [
      payment.id,
      payment.merchantId,
      input.idempotencyKey,
      refundAcquirerKey(payment.acquirerKey, input.idempotencyKey),
      input.amountMinor,
      new Date(input.nowMs + input.retryAfterMs),
      input.leaseOwner,
      new Date(input.nowMs + input.leaseMs),
      input.idemGeneration,
      new Date(input.nowMs),
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
 * One refund of one payment (its internal id) by the refund's public id, scoped to its merchant:
 * another merchant's, or another payment's, reads as absent.
 */
export async function findRefund(
  q: Queryable,
  merchantId: string,
  paymentId: bigint,
  refundPublicId: string,
): Promise<Refund | undefined> {
  const { rows } = await q.query<RefundRow>(
    "SELECT * FROM payment_refunds WHERE public_id = $1 AND payment_id = $2 AND merchant_id = $3",
    [refundPublicId, paymentId, merchantId],
  );
  return rows[0] === undefined ? undefined : toRefund(rows[0]);
}

export interface RefundClaimOptions {
  owner: string;
  nowMs: number;
  /** Must cover the claimer's acquirer calls for one round (checked by the retry worker). */
  leaseMs: number;
}

/**
 * The refunds table as a leased claim queue (infra lease-queue.ts): a pending refund is
 * claimable, and every fenced write requires it still pending (a settled refund never changes).
 */
export const refundQueue = new LeaseQueue<RefundRow, bigint>({
  table: "payment_refunds",
  idType: "int8",
  claimable: "t.status = 'pending'",
  held: "t.status = 'pending'",
  order: "t.next_attempt_at",
  minLeaseMs: MIN_LEASE_MS,
});

/**
 * Claims up to `maxBatch` refunds stuck in `pending` past their `next_attempt_at`, unleased or
 * with an expired lease. SKIP LOCKED: concurrent claimers take disjoint rows without waiting; the
 * version bump fences whatever a previous owner still tries to write.
 */
export async function claimDueRefunds(
  q: Queryable,
  options: RefundClaimOptions & { maxBatch: number },
): Promise<Refund[]> {
  const claimed = await refundQueue.claim(q, {
    owner: options.owner,
    nowMs: options.nowMs,
    leaseMs: options.leaseMs,
    limit: options.maxBatch,
  });
  return claimed.map((c) => toRefund(c.row));
}

/**
 * Claims one pending refund when nobody else holds it (a client's retry of its request); undefined
 * otherwise. It waits for a transaction holding the row (`locked: "wait"`) and decides on the row
 * as that left it, as the plain UPDATE it replaces did.
 */
export async function claimRefund(
  q: Queryable,
  id: bigint,
  options: RefundClaimOptions,
): Promise<Refund | undefined> {
  const claimed = await refundQueue.claimById(q, id, {
    owner: options.owner,
    nowMs: options.nowMs,
    leaseMs: options.leaseMs,
    orOwn: true,
    locked: "wait",
  });
  return claimed === undefined ? undefined : toRefund(claimed.row);
}

/** The fenced write every settlement of a claimed refund goes through; PAYMENTS_REFUND_LEASE_LOST when fenced. */
async function updateOwned(
  q: Queryable,
  refund: Refund,
  write: { owner: string; nowMs: number; set: Fragment },
): Promise<Refund> {
  const lease = {
    id: refund.id,
    leaseVersion: refund.leaseVersion,
    owner: write.owner,
    leaseExpiresAtMs: refund.leaseExpiresAt?.getTime() ?? 0,
  };
  const written = await refundQueue.update(q, lease, { nowMs: write.nowMs, set: write.set });
  if (!written.won) {
    throw paymentErrors.create("PAYMENTS_REFUND_LEASE_LOST", { fields: { refundId: refund.id.toString() } });
  }
  return toRefund(written.row);
}

/**
 * The acquirer confirmed the refund: the refund row (compare-and-set, so it settles once), the
 * ledger reversal of the posted capture (`pay:<id>:refund:<key>`, PY-15) and the payment's status,
 * in `tx`. The caller locked `payment` first (lockPayment): the one lock order of refund writers.
 */
export async function completeRefund(
  tx: Queryable,
  refund: Refund,
  payment: Payment,
  input: { acquirerRefundId: string; nowMs: number; owner: string },
): Promise<Refund> {
  const now = new Date(input.nowMs);
  const claimed = await updateOwned(tx, refund, {
    owner: input.owner,
    nowMs: input.nowMs,
    set: (p) =>
      `status = 'succeeded', acquirer_refund_id = ${p.add(input.acquirerRefundId)}, updated_at = ${p.now}`,
  });
  // PY-16: after a partial capture the posted money sits in the capture transfer, not the hold.
  const reversal = await applyReversal(tx, payment.captureTransactionId ?? payment.holdTransactionId, {
    idemKey: refundLedgerKey(payment.id, refund.idempotencyKey),
    amount: refund.amountMinor,
    metadata: { paymentId: payment.id.toString(), refundId: refund.id.toString() },
  });
  const { rows } = await tx.query<RefundRow>(
    "UPDATE payment_refunds SET ledger_transaction_id = $2 WHERE id = $1 RETURNING *",
    [claimed.id, reversal.transaction.id],
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

/** The acquirer refused the refund for good: failed, and its reserved amount released. */
export async function failRefund(
  tx: Queryable,
  refund: Refund,
  input: { failure: string; nowMs: number; owner: string },
): Promise<Refund> {
  const failed = await updateOwned(tx, refund, {
    owner: input.owner,
    nowMs: input.nowMs,
    set: (p) => `status = 'failed', failure = ${p.add(input.failure)}, updated_at = ${p.now}`,
  });
  await tx.query("UPDATE payments SET refunded_minor = refunded_minor - $2 WHERE id = $1", [
    refund.paymentId,
    refund.amountMinor,
  ]);
  return failed;
}

/** No answer this round: the lease is given back and the refund is due again at `nextAttemptAtMs`. */
export async function postponeRefund(
  q: Queryable,
  refund: Refund,
  input: { attempts: number; nextAttemptAtMs: number; nowMs: number; owner: string },
): Promise<Refund> {
  return updateOwned(q, refund, {
    owner: input.owner,
    nowMs: input.nowMs,
    set: (p) =>
      `attempts = ${p.add(input.attempts)}, next_attempt_at = ${p.add(new Date(input.nextAttemptAtMs))},
       updated_at = ${p.now}`,
  });
}

/**
 * The retry bound is spent and the outcome is still unknown: `unresolved`, terminal for the worker.
 * The reservation stays (the acquirer may have refunded); reconciliation against the D+1 file finds
 * the refund if it happened (missing_in_ledger) and its adjustment books it.
 */
export async function giveUpRefund(
  q: Queryable,
  refund: Refund,
  input: { attempts: number; failure: string; nowMs: number; owner: string },
): Promise<Refund> {
  return updateOwned(q, refund, {
    owner: input.owner,
    nowMs: input.nowMs,
    set: (p) =>
      `status = 'unresolved', attempts = ${p.add(input.attempts)}, failure = ${p.add(input.failure)},
       updated_at = ${p.now}`,
  });
}

/**
 * Reconciliation matching (PY-10), pure: the acquirer's D+1 settlement rows against the operations
 * our ledger booked, by (operation, acquirer key). Every difference is one exception:
 *
 * - `missing_in_ledger`: the acquirer settled an operation we have no booked record of.
 * - `missing_at_acquirer`: we booked an operation of that day and the file has no row for it.
 * - `amount_mismatch`: both sides have it, with another amount or currency.
 *
 * Only OUR operations inside the day are required to be in the file (the file is the day's); a
 * file row is looked up among all our operations, whatever day we booked it, so a capture we
 * recorded a few ms before midnight and the acquirer just after is still a match, not two errors.
 *
 * @example
 * const result = matchSettlement(parseSettlementCsv(csv), booked, utcDay("2026-10-22")!);
 * result.matched; // 41
 * result.differences; // [{ kind: "amount_mismatch", acquirerKey: "m1:k7", expectedMinor: 5000n, actualMinor: 5123n, ... }]
 */
import type { SettlementRow, UtcDay } from "../acquirer-sim/settlement-file.ts";

export type SettlementOperation = "capture" | "refund";

export const EXCEPTION_KINDS = ["missing_in_ledger", "missing_at_acquirer", "amount_mismatch"] as const;
export type ExceptionKind = (typeof EXCEPTION_KINDS)[number];

/** An operation our ledger booked: a posted capture or a succeeded refund. */
export interface BookedOperation {
  readonly operation: SettlementOperation;
  /** The key sent to the acquirer (payments.acquirer_key / payment_refunds.acquirer_key). */
  readonly acquirerKey: string;
  readonly amountMinor: bigint;
  readonly currency: string;
  /** When we booked it (capture or refund completion), epoch ms. */
  readonly atMs: number;
  readonly paymentId: bigint;
  readonly refundId: bigint | null;
}

/** One difference between the file and the ledger. */
export interface Difference {
  readonly kind: ExceptionKind;
  readonly operation: SettlementOperation;
  readonly acquirerKey: string;
  /** What our ledger says, null when we have nothing. */
  readonly expectedMinor: bigint | null;
  /** What the acquirer settled, null when the file has nothing. */
  readonly actualMinor: bigint | null;
  readonly currency: string;
  readonly paymentId: bigint | null;
  readonly refundId: bigint | null;
}

export interface MatchResult {
  /** File rows equal to a booked operation. */
  readonly matched: number;
  readonly differences: Difference[];
}

/** The identity both sides share: one capture per authorization key, one row per refund key. */
export function operationKey(operation: SettlementOperation, acquirerKey: string): string {
  return `${operation}\u0000${acquirerKey}`;
}

function rowDifference(row: SettlementRow, ours: BookedOperation | undefined): Difference | undefined {
  const base = { operation: row.operation, acquirerKey: row.idempotencyKey, actualMinor: row.amountMinor };
  if (ours === undefined) {
    return {
      ...base,
      kind: "missing_in_ledger",
      expectedMinor: null,
      currency: row.currency,
      paymentId: null,
      refundId: null,
    };
  }
  if (ours.amountMinor === row.amountMinor && ours.currency === row.currency) return undefined;
  // A currency difference is an amount difference too: the same number in another unit is not the same money.
  return {
    ...base,
    kind: "amount_mismatch",
    expectedMinor: ours.amountMinor,
    currency: ours.currency,
    paymentId: ours.paymentId,
    refundId: ours.refundId,
  };
}

/**
 * Matches one day's settlement rows against our booked operations. `booked` must hold every
 * operation we booked inside `day` plus any other we booked whose key appears in the file.
 * A second file row for an already matched key is `missing_in_ledger`: we booked it once.
 */
export function matchSettlement(
  rows: readonly SettlementRow[],
  booked: readonly BookedOperation[],
  day: UtcDay,
): MatchResult {
  const ours = new Map(booked.map((op) => [operationKey(op.operation, op.acquirerKey), op]));
  const seen = new Set<string>();
  const differences: Difference[] = [];
  let matched = 0;
  for (const row of rows) {
    const key = operationKey(row.operation, row.idempotencyKey);
    const difference = rowDifference(row, seen.has(key) ? undefined : ours.get(key));
    seen.add(key);
    if (difference === undefined) matched += 1;
    else differences.push(difference);
  }
  for (const op of booked) {
    if (op.atMs < day.startMs || op.atMs >= day.endMs) continue;
    if (seen.has(operationKey(op.operation, op.acquirerKey))) continue;
    differences.push({
      kind: "missing_at_acquirer",
      operation: op.operation,
      acquirerKey: op.acquirerKey,
      expectedMinor: op.amountMinor,
      actualMinor: null,
      currency: op.currency,
      paymentId: op.paymentId,
      refundId: op.refundId,
    });
  }
  return { matched, differences };
}

/** A ledger correction for one difference, in the direction money moved (or must move back). */
export interface Correction {
  /** The account role money leaves and the one it enters. */
  readonly from: "customer_funds" | "merchant_pending";
  readonly to: "customer_funds" | "merchant_pending";
  readonly amountMinor: bigint;
}

/**
 * What the ledger must add so it says what the acquirer settled: a capture moves money
 * customer_funds → merchant_pending, a refund the other way; the correction books the signed
 * difference (acquirer − ledger) in that direction, flipped when negative. Undefined for a
 * zero difference (nothing to book).
 */
export function correctionFor(
  operation: SettlementOperation,
  expectedMinor: bigint | null,
  actualMinor: bigint | null,
): Correction | undefined {
  const delta = (actualMinor ?? 0n) - (expectedMinor ?? 0n);
  if (delta === 0n) return undefined;
  const forward = operation === "capture" ? delta > 0n : delta < 0n;
  return forward
    ? { from: "customer_funds", to: "merchant_pending", amountMinor: delta < 0n ? -delta : delta }
    : { from: "merchant_pending", to: "customer_funds", amountMinor: delta < 0n ? -delta : delta };
}

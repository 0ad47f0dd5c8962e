/**
 * Reconciliation matching (PY-10), pure: the acquirer's D+1 settlement rows against the operations
 * our ledger booked, by (operation, acquirer key). Every difference is one exception:
 *
 * - `missing_in_ledger`: the acquirer settled an operation we have no booked record of.
 * - `missing_at_acquirer`: we booked an operation of that day and the file has no row for it.
 * - `amount_mismatch`: both sides have it, with another amount or currency.
 * - `fee_mismatch`: a matched capture whose fee in the file differs from the fee our ledger booked
 *   for it (the contracted `feeBps`, or none when it could not be booked).
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
import type { SettlementRow, UtcDay } from "../sim/settlement-file.ts";

export type SettlementOperation = "capture" | "refund";

export const EXCEPTION_KINDS = [
  "missing_in_ledger",
  "missing_at_acquirer",
  "amount_mismatch",
  "fee_mismatch",
] as const;
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

/** The ledger accounts a correction moves money between: a merchant's two, or the platform's fee account. */
export type CorrectionAccount = "customer_funds" | "merchant_pending" | "acquirer_fees";

/** A ledger correction for one difference, in the direction money moved (or must move back). */
export interface Correction {
  /** The account money leaves and the one it enters. */
  readonly from: CorrectionAccount;
  readonly to: CorrectionAccount;
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

/** Basis points in a whole: 150 bps is 1.5 %. */
const BPS = 10_000n;

/**
 * The fee our contract with the acquirer sets on a capture: `feeBps` of the amount, rounded half up,
 * in minor units (PY-10).
 *
 * @example
 * contractedFeeMinor(5_000n, 150); // 75n
 */
export function contractedFeeMinor(amountMinor: bigint, feeBps: number): bigint {
  if (!Number.isInteger(feeBps) || feeBps < 0 || feeBps > 10_000) throw new RangeError("feeBps in 0..10000");
  if (amountMinor < 0n) throw new RangeError("amountMinor >= 0");
  return (amountMinor * BigInt(feeBps) + BPS / 2n) / BPS;
}

/** A capture both sides agree on, whose fee is to be booked and checked. */
export interface FeeCheck {
  readonly acquirerKey: string;
  readonly paymentId: bigint;
  readonly currency: string;
  /** The captured amount (equal on both sides). */
  readonly amountMinor: bigint;
  /** What the file says the acquirer withheld. */
  readonly fileFeeMinor: bigint;
  /** What our contract says it may withhold. */
  readonly contractedFeeMinor: bigint;
}

/**
 * The captures of the file that match our booking exactly (the first row of a key, as
 * `matchSettlement` counts them): only those carry a fee to book. A mismatched or unknown capture
 * is an exception of its own first; its fee waits for that to be resolved.
 *
 * @example
 * feeChecks([row], [booked], 150); // [{ acquirerKey, contractedFeeMinor: 75n, fileFeeMinor: 75n, ... }]
 */
export function feeChecks(
  rows: readonly SettlementRow[],
  booked: readonly BookedOperation[],
  feeBps: number,
): FeeCheck[] {
  const ours = new Map(booked.map((op) => [operationKey(op.operation, op.acquirerKey), op]));
  const seen = new Set<string>();
  const checks: FeeCheck[] = [];
  for (const row of rows) {
    const key = operationKey(row.operation, row.idempotencyKey);
    const op = seen.has(key) ? undefined : ours.get(key);
    seen.add(key);
    if (row.operation !== "capture" || op === undefined) continue;
    if (op.amountMinor !== row.amountMinor || op.currency !== row.currency) continue;
    checks.push({
      acquirerKey: row.idempotencyKey,
      paymentId: op.paymentId,
      currency: op.currency,
      amountMinor: op.amountMinor,
      fileFeeMinor: row.feeMinor,
      contractedFeeMinor: contractedFeeMinor(op.amountMinor, feeBps),
    });
  }
  return checks;
}

/**
 * `fee_mismatch` differences: every check whose file fee differs from the fee our ledger holds for
 * it (`bookedFees`: the booked amount, or null when none could be booked). Expected = ours,
 * actual = the file's, as for every other kind.
 */
export function feeDifferences(
  checks: readonly FeeCheck[],
  bookedFees: ReadonlyMap<string, bigint | null>,
): Difference[] {
  const differences: Difference[] = [];
  for (const check of checks) {
    const ours = bookedFees.get(check.acquirerKey) ?? null;
    if (ours === check.fileFeeMinor) continue;
    differences.push({
      kind: "fee_mismatch",
      operation: "capture",
      acquirerKey: check.acquirerKey,
      expectedMinor: ours,
      actualMinor: check.fileFeeMinor,
      currency: check.currency,
      paymentId: check.paymentId,
      refundId: null,
    });
  }
  return differences;
}

/**
 * The correction that makes the fee our ledger holds equal what the acquirer withheld: the signed
 * difference (file − ledger) moves merchant_pending → acquirer_fees, flipped when negative.
 *
 * @example
 * feeCorrectionFor(75n, 80n); // { from: "merchant_pending", to: "acquirer_fees", amountMinor: 5n }
 */
export function feeCorrectionFor(
  expectedMinor: bigint | null,
  actualMinor: bigint | null,
): Correction | undefined {
  const delta = (actualMinor ?? 0n) - (expectedMinor ?? 0n);
  if (delta === 0n) return undefined;
  return delta > 0n
    ? { from: "merchant_pending", to: "acquirer_fees", amountMinor: delta }
    : { from: "acquirer_fees", to: "merchant_pending", amountMinor: -delta };
}

/**
 * PY-10 pure matching: settlement rows against booked operations by (operation, key), every
 * difference classified once, the direction of each ledger correction, and the fee checks.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  type BookedOperation,
  contractedFeeMinor,
  correctionFor,
  feeChecks,
  feeCorrectionFor,
  feeDifferences,
  matchSettlement,
} from "../src/domain/reconciliation.ts";
import { type SettlementRow, utcDay } from "../src/sim/settlement-file.ts";

const day = utcDay("2026-10-22")!;
const noon = day.startMs + 12 * 3_600_000;

function row(key: string, amount: bigint, overrides: Partial<SettlementRow> = {}): SettlementRow {
  return {
    idempotencyKey: key,
    authorizationId: `auth_${key}`,
    operation: "capture",
    amountMinor: amount,
    currency: "BRL",
    feeMinor: 0n,
    settledAtMs: noon,
    ...overrides,
  };
}

function booked(key: string, amount: bigint, overrides: Partial<BookedOperation> = {}): BookedOperation {
  return {
    operation: "capture",
    acquirerKey: key,
    amountMinor: amount,
    currency: "BRL",
    atMs: noon,
    paymentId: 1n,
    refundId: null,
    ...overrides,
  };
}

test("PY-10 equal sides match with no difference", () => {
  const result = matchSettlement(
    [row("a", 500n), row("a:r1", 100n, { operation: "refund" })],
    [booked("a", 500n), booked("a:r1", 100n, { operation: "refund", refundId: 9n })],
    day,
  );
  assert.deepEqual(result, { matched: 2, differences: [] });
});

test("PY-10 each kind of difference is reported once, with both sides' amounts", () => {
  const result = matchSettlement(
    [row("same", 500n), row("changed", 777n), row("unknown", 42n)],
    [
      booked("same", 500n),
      booked("changed", 700n, { paymentId: 2n }),
      booked("dropped", 300n, { paymentId: 3n }),
    ],
    day,
  );
  assert.equal(result.matched, 1);
  assert.deepEqual(
    result.differences.map((d) => [d.kind, d.acquirerKey, d.expectedMinor, d.actualMinor, d.paymentId]),
    [
      ["amount_mismatch", "changed", 700n, 777n, 2n],
      ["missing_in_ledger", "unknown", null, 42n, null],
      ["missing_at_acquirer", "dropped", 300n, null, 3n],
    ],
  );
});

test("PY-10 capture and refund with the same key are different operations", () => {
  const result = matchSettlement([row("k", 500n, { operation: "refund" })], [booked("k", 500n)], day);
  assert.deepEqual(
    result.differences.map((d) => [d.kind, d.operation]),
    [
      ["missing_in_ledger", "refund"],
      ["missing_at_acquirer", "capture"],
    ],
  );
});

test("PY-10 a currency difference is an amount mismatch", () => {
  const result = matchSettlement([row("k", 500n, { currency: "USD" })], [booked("k", 500n)], day);
  assert.equal(result.differences[0]!.kind, "amount_mismatch");
  assert.equal(result.differences[0]!.currency, "BRL");
});

test("PY-10 only our operations inside the day must be in the file; a file row matches any day's booking", () => {
  const yesterday = noon - 86_400_000;
  const result = matchSettlement(
    [row("late", 500n)],
    [booked("late", 500n, { atMs: day.startMs - 3 }), booked("other-day", 900n, { atMs: yesterday })],
    day,
  );
  assert.deepEqual(result, { matched: 1, differences: [] });
  const edge = matchSettlement(
    [],
    [booked("end", 1n, { atMs: day.endMs }), booked("start", 1n, { atMs: day.startMs })],
    day,
  );
  assert.deepEqual(
    edge.differences.map((d) => d.acquirerKey),
    ["start"],
  );
});

test("PY-10 a duplicated file row is settled once too often: missing_in_ledger", () => {
  const result = matchSettlement([row("k", 500n), row("k", 500n)], [booked("k", 500n)], day);
  assert.equal(result.matched, 1);
  assert.deepEqual(
    result.differences.map((d) => d.kind),
    ["missing_in_ledger"],
  );
});

test("PY-10 corrections move the acquirer-minus-ledger difference in the operation's direction", () => {
  assert.deepEqual(correctionFor("capture", 700n, 777n), {
    from: "customer_funds",
    to: "merchant_pending",
    amountMinor: 77n,
  });
  assert.deepEqual(correctionFor("capture", 300n, null), {
    from: "merchant_pending",
    to: "customer_funds",
    amountMinor: 300n,
  });
  assert.deepEqual(correctionFor("capture", null, 42n), {
    from: "customer_funds",
    to: "merchant_pending",
    amountMinor: 42n,
  });
  assert.deepEqual(correctionFor("refund", 100n, 150n), {
    from: "merchant_pending",
    to: "customer_funds",
    amountMinor: 50n,
  });
  assert.deepEqual(correctionFor("refund", 100n, null), {
    from: "customer_funds",
    to: "merchant_pending",
    amountMinor: 100n,
  });
  assert.equal(correctionFor("capture", 5n, 5n), undefined);
});

test("PY-10 the contracted fee is feeBps of the capture, rounded half up, in minor units", () => {
  assert.equal(contractedFeeMinor(5_000n, 150), 75n);
  assert.equal(contractedFeeMinor(333n, 150), 5n, "4.995 rounds up");
  assert.equal(contractedFeeMinor(33n, 150), 0n, "0.495 rounds down");
  assert.equal(contractedFeeMinor(1n, 5_000), 1n, "0.5 rounds up");
  assert.equal(contractedFeeMinor(10n ** 15n, 10_000), 10n ** 15n, "bigint all the way: no float");
  assert.throws(() => contractedFeeMinor(100n, 1.5), RangeError);
  assert.throws(() => contractedFeeMinor(100n, 10_001), RangeError);
});

test("PY-10 only captures matched on amount and currency carry a fee to check, once per key", () => {
  const checks = feeChecks(
    [
      row("ok", 5_000n, { feeMinor: 75n }),
      row("ok", 5_000n, { feeMinor: 75n }), // a duplicate row: missing_in_ledger, never a second fee
      row("changed", 900n, { feeMinor: 14n }),
      row("ok:r1", 100n, { operation: "refund" }),
      row("unknown", 42n, { feeMinor: 1n }),
    ],
    [booked("ok", 5_000n), booked("changed", 700n), booked("ok:r1", 100n, { operation: "refund" })],
    150,
  );
  assert.deepEqual(checks, [
    {
      acquirerKey: "ok",
      paymentId: 1n,
      currency: "BRL",
      amountMinor: 5_000n,
      fileFeeMinor: 75n,
      contractedFeeMinor: 75n,
    },
  ]);
});

test("PY-10 a fee differing from what the ledger holds is a fee_mismatch: expected ours (null: none), actual the file's", () => {
  const check = (key: string, fileFeeMinor: bigint) => ({
    acquirerKey: key,
    paymentId: 7n,
    currency: "BRL",
    amountMinor: 5_000n,
    fileFeeMinor,
    contractedFeeMinor: 75n,
  });
  const differences = feeDifferences(
    [check("same", 75n), check("higher", 100n), check("unbooked", 75n)],
    new Map<string, bigint | null>([
      ["same", 75n],
      ["higher", 75n],
      ["unbooked", null],
    ]),
  );
  assert.deepEqual(
    differences.map((d) => [d.kind, d.operation, d.acquirerKey, d.expectedMinor, d.actualMinor, d.paymentId]),
    [
      ["fee_mismatch", "capture", "higher", 75n, 100n, 7n],
      ["fee_mismatch", "capture", "unbooked", null, 75n, 7n],
    ],
  );
});

test("PY-10 a fee correction moves the file-minus-ledger difference between merchant_pending and acquirer_fees", () => {
  assert.deepEqual(feeCorrectionFor(75n, 100n), {
    from: "merchant_pending",
    to: "acquirer_fees",
    amountMinor: 25n,
  });
  assert.deepEqual(feeCorrectionFor(75n, 60n), {
    from: "acquirer_fees",
    to: "merchant_pending",
    amountMinor: 15n,
  });
  assert.deepEqual(feeCorrectionFor(null, 15n), {
    from: "merchant_pending",
    to: "acquirer_fees",
    amountMinor: 15n,
  });
  assert.equal(feeCorrectionFor(75n, 75n), undefined);
});

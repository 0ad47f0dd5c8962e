import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  apportion,
  type IntervalUsage,
  type RebalanceOptions,
  rebalance,
  simulateQuotaSplit,
  splitQuota,
} from "../src/domain/quota-split.ts";

const OPTIONS: RebalanceOptions = { quota: 1_000, minShare: 50, smoothing: 0.5 };
const sum = (record: Readonly<Record<string, number>>) => Object.values(record).reduce((a, b) => a + b, 0);

test("apportion returns integers summing to the total, proportional to the weights, ties by name", () => {
  assert.deepEqual(apportion(10, { a: 1, b: 1, c: 1 }), { a: 4, b: 3, c: 3 });
  assert.deepEqual(apportion(1_000, { east: 3, west: 2 }), { east: 600, west: 400 });
  assert.deepEqual(apportion(7, { a: 0, b: 0 }), { a: 4, b: 3 });
  assert.deepEqual(apportion(0, { a: 5 }), { a: 0 });
});

test("the first split is the text's 600/400", () => {
  const state = splitQuota(1_000, { "region-a": 600, "region-b": 400 });
  assert.deepEqual(state.shares, { "region-a": 600, "region-b": 400 });
  assert.equal(state.held, 0);
  assert.throws(() => splitQuota(0, { a: 1 }), RangeError);
  assert.throws(() => splitQuota(10, { a: -1 }), RangeError);
});

test("RL-14 region A busy, region B idle: shares move toward A over a few intervals, B keeps its floor, and the admitted total per interval stays within quota + B's unused share", (t) => {
  const initial = splitQuota(1_000, { a: 600, b: 400 });
  const rows = simulateQuotaSplit({
    initial,
    options: OPTIONS,
    application: "lagging",
    demands: Array.from({ length: 8 }, () => ({ a: 1_500, b: 0 })),
  });
  const shares = rows.map((r) => r.shares.a);
  t.diagnostic(`share of A after each interval: ${shares.join(", ")}`);
  for (let i = 1; i < shares.length; i++)
    assert.ok(shares[i]! >= shares[i - 1]!, "A's share never shrinks while B stays idle");
  assert.ok(shares[3]! >= 900, `after 4 intervals A should hold >= 900, got ${shares[3]}`);
  assert.equal(rows.at(-1)?.shares.b, 50, "the idle region keeps its floor");
  for (const row of rows) {
    assert.equal(sum(row.shares), 1_000);
    assert.ok(
      row.admittedTotal <= 1_000 + row.overshootBound,
      `interval ${row.interval}: ${row.admittedTotal}`,
    );
  }
  // The bound is the idle region's unused share: B used nothing of its 400 in interval 0.
  assert.ok(rows[1]!.overshootBound <= 400);
});

test("RL-14 the worst case the bound allows is reached: the idle region wakes up in the interval its share is handed over", () => {
  const initial = splitQuota(1_000, { a: 600, b: 400 });
  // Interval 0: B idle, so the rebalancer hands part of its unused 400 to A at once.
  // Interval 1: B wakes up and, still running its OLD share (lagging), spends all of it while A runs its NEW one.
  const rows = simulateQuotaSplit({
    initial,
    options: OPTIONS,
    application: "lagging",
    demands: [
      { a: 1_500, b: 0 },
      { a: 1_500, b: 1_500 },
    ],
  });
  const [first, second] = rows;
  assert.ok(first && second);
  assert.ok(second.overshootBound > 0);
  assert.equal(
    second.admittedTotal,
    1_000 + second.overshootBound,
    "overshoot equals the moved unused share, no more",
  );
  assert.ok(
    second.overshootBound <= initial.shares.b! - first.admitted.b!,
    "moved ≤ B's unused share in interval 0",
  );
});

test("RL-14 with synchronous application the regions never admit more than the quota", () => {
  const demands = Array.from({ length: 20 }, (_, i) => ({
    a: i < 10 ? 1_500 : 300,
    b: i < 5 ? 0 : 900,
    c: (i * 97) % 400,
  }));
  const rows = simulateQuotaSplit({
    initial: splitQuota(1_000, { a: 5, b: 3, c: 2 }),
    options: OPTIONS,
    application: "sync",
    demands,
  });
  for (const row of rows)
    assert.ok(row.admittedTotal <= 1_000, `interval ${row.interval}: ${row.admittedTotal}`);
});

test("RL-14 a region that comes back gets share from a busy one through the held step, with no overshoot for it", () => {
  let state = splitQuota(1_000, { a: 950, b: 50 });
  // A uses all its share, so nothing it gives up may change hands at once: it is held for one interval.
  const busy: Record<string, IntervalUsage> = {
    a: { used: 950, demand: 1_500 },
    b: { used: 50, demand: 500 },
  };
  const step1 = rebalance(state, busy, OPTIONS);
  assert.equal(step1.moved, 0);
  assert.ok(step1.reclaimed > 0);
  assert.equal(step1.state.shares.b, 50, "B does not grow before A has shrunk");
  assert.equal(sum(step1.state.shares) + step1.state.held, 1_000);
  state = step1.state;
  const step2 = rebalance(
    state,
    { a: { used: state.shares.a!, demand: 1_500 }, b: { used: 50, demand: 500 } },
    OPTIONS,
  );
  assert.ok(step2.state.shares.b! > 50, "the held share reaches B one interval later");
  // Converges to the demand proportions 1500 : 500, both above the floor.
  let s = step2.state;
  for (let i = 0; i < 12; i++) {
    s = rebalance(
      s,
      { a: { used: s.shares.a!, demand: 1_500 }, b: { used: s.shares.b!, demand: 500 } },
      OPTIONS,
    ).state;
  }
  assert.deepEqual({ ...s.shares, held: s.held }, { a: 750, b: 250, held: 0 });
  const rows = simulateQuotaSplit({
    initial: splitQuota(1_000, { a: 950, b: 50 }),
    options: OPTIONS,
    application: "lagging",
    demands: Array.from({ length: 10 }, () => ({ a: 1_500, b: 500 })),
  });
  for (const row of rows) assert.ok(row.admittedTotal <= 1_000 + row.overshootBound);
  assert.ok(
    rows.every((r) => r.overshootBound === 0),
    "moving used share costs no overshoot",
  );
});

test("RL-14 invariants hold for any usage: shares + held = quota, floors kept, moved ≤ donors' unused share", () => {
  const regions = ["a", "b", "c"];
  const usageArb = fc.record(
    Object.fromEntries(regions.map((r) => [r, fc.tuple(fc.nat(2_000), fc.nat(3_000))])),
  );
  fc.assert(
    fc.property(
      fc.array(usageArb, { minLength: 1, maxLength: 12 }),
      fc.double({ min: 0.05, max: 1, noNaN: true }),
      (trace, smoothing) => {
        const options = { quota: 999, minShare: 40, smoothing };
        let state = splitQuota(999, { a: 1, b: 1, c: 1 });
        for (const step of trace) {
          const usage: Record<string, IntervalUsage> = {};
          let unusedOfDonors = 0;
          for (const r of regions) {
            const [used, extra] = step[r] as [number, number];
            const admitted = Math.min(used, state.shares[r]!);
            usage[r] = { used: admitted, demand: admitted + extra };
          }
          const result = rebalance(state, usage, options);
          for (const r of regions) {
            if (result.state.shares[r]! < state.shares[r]!)
              unusedOfDonors += state.shares[r]! - usage[r]!.used;
            assert.ok(result.state.shares[r]! >= 40);
            assert.ok(Number.isInteger(result.state.shares[r]));
          }
          assert.equal(sum(result.state.shares) + result.state.held, 999);
          assert.ok(result.moved <= unusedOfDonors);
          state = result.state;
        }
      },
    ),
    { seed: 14, numRuns: 300 },
  );
});

test("rebalance refuses inputs that would break the invariants", () => {
  const state = splitQuota(1_000, { a: 600, b: 400 });
  const usage = { a: { used: 0, demand: 0 }, b: { used: 0, demand: 0 } };
  assert.throws(() => rebalance(state, usage, { ...OPTIONS, quota: 900 }), /start again with splitQuota/);
  assert.throws(() => rebalance(state, { a: usage.a }, OPTIONS), /usage must cover/);
  assert.throws(() => rebalance(state, usage, { ...OPTIONS, minShare: 600 }), RangeError);
  assert.throws(() => rebalance(state, usage, { ...OPTIONS, smoothing: 0 }), RangeError);
  // Nobody asked for anything: the split stays.
  assert.deepEqual(rebalance(state, usage, OPTIONS).state.shares, { a: 600, b: 400 });
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { descriptor } from "../src/domain/descriptors.ts";
import { parsePolicyConfig, resolveLimits } from "../src/domain/policy.ts";
import {
  expectedShortfall,
  RoundRobinPicker,
  randomPicker,
  randomShortfallBound,
  roundRobinShortfallBound,
  shareOf,
  simulateSubBuckets,
  splitLimit,
  subBucketKey,
} from "../src/domain/sub-buckets.ts";

const QUOTA = 1_000;
const SPLITS = [1, 2, 4, 8, 16];
const TRIALS = 400;

test("RL-09 overshoot is 0: sub-bucket capacities sum to the quota exactly, even when N does not divide it", () => {
  for (const quota of [1, 5, 999, 1_000, 1_001]) {
    for (const n of SPLITS.filter((n) => n <= quota)) {
      const shares = Array.from({ length: n }, (_, i) => shareOf(quota, i, n));
      assert.equal(
        shares.reduce((a, b) => a + b, 0),
        quota,
      );
      assert.ok(Math.max(...shares) - Math.min(...shares) <= 1);
    }
  }
  // The naive ceil(C/N) per sub-bucket would overshoot: 16 × 63 = 1008 for a quota of 1000.
  assert.equal(16 * Math.ceil(QUOTA / 16) - QUOTA, 8);
});

test("splitLimit gives each sub-bucket its integer share of the burst and 1/N of the rate", () => {
  const parts = Array.from({ length: 4 }, (_, i) =>
    splitLimit({ algorithm: "token-bucket", capacity: 10, ratePerS: 4 }, i, 4),
  );
  assert.deepEqual(
    parts.map((p) => ("capacity" in p ? [p.capacity, p.ratePerS] : [])),
    [
      [3, 1],
      [3, 1],
      [2, 1],
      [2, 1],
    ],
  );
  assert.deepEqual(splitLimit({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 7, 8), {
    algorithm: "fixed-window",
    limit: 12,
    windowMs: 60_000,
  });
  assert.deepEqual(splitLimit({ algorithm: "gcra", burst: 9, ratePerS: 3 }, 0, 3), {
    algorithm: "gcra",
    burst: 3,
    ratePerS: 1,
  });
  assert.deepEqual(splitLimit({ algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 2 }, 1, 4), {
    algorithm: "leaky-bucket",
    queueCapacity: 3,
    ratePerS: 0.5,
  });
  assert.throws(() => splitLimit({ algorithm: "gcra", burst: 9, ratePerS: 3 }, 3, 3), RangeError);
  assert.throws(() => splitLimit({ algorithm: "gcra", burst: 9, ratePerS: 3 }, 0, 65), RangeError);
});

test("RL-09 sub-bucket keys spread one client over several cluster slots", () => {
  const config = parsePolicyConfig({
    policies: [
      {
        name: "hot",
        key: "user:{user}",
        subBuckets: 8,
        limit: { algorithm: "token-bucket", capacity: 800, ratePerS: 80 },
      },
    ],
  });
  const picker = new RoundRobinPicker({ random: seededRandom("slots"), maxKeys: 16 });
  const limits = Array.from(
    { length: 8 },
    () => resolveLimits(config, descriptor({ user: "42" }), { picker }).limits[0]!,
  );
  assert.deepEqual(new Set(limits.map((l) => l.subBucket?.index)), new Set([0, 1, 2, 3, 4, 5, 6, 7]));
  assert.ok(new Set(limits.map((l) => l.slot)).size >= 6, "sub-buckets should land on different slots");
  assert.equal(subBucketKey("rl:hot:tb:user:42", 3), "rl:hot:tb:user:42:3");
});

test("round-robin picking cycles per key from a random offset and remembers at most maxKeys keys", () => {
  const picker = new RoundRobinPicker({ random: seededRandom(1), maxKeys: 2 });
  const first = picker.pick("a", 4);
  assert.deepEqual(
    [picker.pick("a", 4), picker.pick("a", 4), picker.pick("a", 4)],
    [1, 2, 3].map((d) => (first + d) % 4),
  );
  picker.pick("b", 4);
  picker.pick("c", 4);
  assert.equal(picker.size, 2);
  assert.throws(() => new RoundRobinPicker({ random: seededRandom(1), maxKeys: 0 }), RangeError);
});

test("the exact expected shortfall matches enumeration on a small case", () => {
  // Quota 2 in 2 sub-buckets, 2 requests: both pick the same bucket with probability 1/2, losing one.
  assert.equal(expectedShortfall(2, 2), 0.5);
  assert.equal(expectedShortfall(1_000, 1), 0);
  // No burst, or a burst far above the quota (every sub-bucket runs dry), loses nothing.
  assert.equal(expectedShortfall(100, 4, 0), 0);
  assert.ok(expectedShortfall(100, 4, 5_000) < 1e-9);
  // For N | C and R = C the bound is ½·√(C(N−1)).
  assert.ok(Math.abs(randomShortfallBound(1_000, 8) - 0.5 * Math.sqrt(1_000 * 7)) < 1e-9);
});

test("RL-09 random picking, N = 1, 2, 4, 8, 16, burst of 1000 on a quota of 1000: admitted never exceeds the quota and the mean shortfall stays within the stated bound", (t) => {
  const rows: string[] = ["N | admitted max | shortfall mean ± se | exact E | stated bound | worst trial"];
  for (const n of SPLITS) {
    const report = simulateSubBuckets({
      quota: QUOTA,
      subBuckets: n,
      trials: TRIALS,
      picking: "random",
      random: seededRandom(`rl09-${n}`),
    });
    const exact = expectedShortfall(QUOTA, n);
    const bound = randomShortfallBound(QUOTA, n);
    rows.push(
      `${n} | ${report.allowedMax} | ${report.shortfallMean.toFixed(1)} ± ${report.shortfallStdErr.toFixed(1)} | ${exact.toFixed(1)} | ${bound.toFixed(1)} | ${report.shortfallMax}`,
    );
    assert.ok(report.allowedMax <= QUOTA, `N=${n}: admitted ${report.allowedMax} > quota`);
    assert.ok(
      report.shortfallMean <= bound,
      `N=${n}: mean shortfall ${report.shortfallMean} > bound ${bound}`,
    );
    // The measurement agrees with the exact formula within 4 standard errors (plus a hair for N = 1, where se = 0).
    assert.ok(
      Math.abs(report.shortfallMean - exact) <= 4 * report.shortfallStdErr + 1e-9,
      `N=${n}: ${report.shortfallMean} vs ${exact}`,
    );
  }
  assert.ok(
    randomShortfallBound(QUOTA, 16) / QUOTA < 0.07,
    "16 sub-buckets lose at most ~6% of a quota-sized burst",
  );
  t.diagnostic(rows.join("\n"));
});

test("RL-09 round-robin pickers on 1 and 3 instances never lose more than M·N/4 + s(N−s)/N of a quota-sized burst", () => {
  for (const instances of [1, 3]) {
    for (const n of SPLITS) {
      const report = simulateSubBuckets({
        quota: QUOTA,
        subBuckets: n,
        trials: TRIALS,
        picking: "round-robin",
        instances,
        random: seededRandom(`rr-${instances}-${n}`),
      });
      assert.ok(report.allowedMax <= QUOTA);
      const bound = roundRobinShortfallBound(QUOTA, n, instances);
      assert.ok(
        report.shortfallMax <= bound,
        `M=${instances} N=${n}: worst ${report.shortfallMax} > ${bound}`,
      );
    }
  }
});

test("RL-09 retrying another sub-bucket on refusal (up to k tries) cuts the shortfall, to 0 at k = N", (t) => {
  const rows: string[] = ["N | k=1 | k=2 | k=3 | k=N | calls/request at k=3"];
  for (const n of SPLITS.filter((n) => n > 1)) {
    const run = (maxTries: number) =>
      simulateSubBuckets({
        quota: QUOTA,
        subBuckets: n,
        trials: TRIALS,
        picking: "random",
        maxTries,
        random: seededRandom(`retry-${n}`),
      });
    const [k1, k2, k3, kn] = [run(1), run(2), run(3), run(n)];
    rows.push(
      `${n} | ${k1.shortfallMean.toFixed(1)} | ${k2.shortfallMean.toFixed(1)} | ${k3.shortfallMean.toFixed(1)} | ${kn.shortfallMean} | ${k3.triesMean.toFixed(3)}`,
    );
    for (const r of [k1, k2, k3, kn]) assert.ok(r.allowedMax <= QUOTA);
    assert.ok(k2.shortfallMean < k1.shortfallMean / 1.5, `N=${n}: one retry should cut the shortfall`);
    assert.ok(k3.shortfallMean <= k2.shortfallMean);
    assert.equal(kn.shortfallMax, 0);
    assert.equal(k1.triesMean, 1);
  }
  t.diagnostic(rows.join("\n"));
});

test("the simulation refuses unbounded runs and bad parameters", () => {
  const random = seededRandom(0);
  assert.throws(
    () => simulateSubBuckets({ quota: 1_000_000, subBuckets: 2, trials: 1_000, picking: "random", random }),
    RangeError,
  );
  assert.throws(
    () => simulateSubBuckets({ quota: 10, subBuckets: 0, trials: 1, picking: "random", random }),
    RangeError,
  );
  assert.throws(() => expectedShortfall(10, 65), RangeError);
  assert.equal(randomPicker(random).pick("k", 1), 0);
});

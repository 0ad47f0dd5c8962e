import assert from "node:assert/strict";
import { test } from "node:test";
import { type BackoffDecision, BackoffPolicy, backoffDelayMs, jitterDelayMs } from "../src/backoff.ts";
import { seededRandom } from "../src/random.ts";

// Seed 003 asserts, base 2 and cap 300, no jitter.
test("003 attempts 1..6 wait [2, 4, 8, 16, 32, 64]", () => {
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6].map((n) => backoffDelayMs(n, 2, 300)),
    [2, 4, 8, 16, 32, 64],
  );
  const policy = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none" });
  assert.deepEqual(
    [1, 2, 3, 4, 5, 6].map((n) => policy.delayMs(n)),
    [2, 4, 8, 16, 32, 64],
  );
});

test("003 attempt 30 waits the cap, 300", () => {
  assert.equal(backoffDelayMs(30, 2, 300), 300);
  assert.equal(new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none" }).delayMs(30), 300);
});

test("003 attempt 0 is refused (attempts start at one)", () => {
  assert.throws(() => backoffDelayMs(0, 2, 300), RangeError);
});

test("the delay reaches the cap exactly where base·2^(n−1) first exceeds it, and stays there", () => {
  assert.equal(backoffDelayMs(8, 2, 300), 256);
  assert.equal(backoffDelayMs(9, 2, 300), 300);
  for (let n = 9; n < 2_000; n++) assert.equal(backoffDelayMs(n, 2, 300), 300);
});

test("huge attempt numbers still give the cap: the exponent is capped, nothing overflows", () => {
  for (const n of [1e6, 2 ** 31, Number.MAX_SAFE_INTEGER, 1e300]) {
    assert.equal(backoffDelayMs(n, 2, 300), 300, String(n));
    assert.equal(backoffDelayMs(n, 0.001, 1e300), 1e300, String(n));
  }
  // A subnormal base with the largest cap needs more than 1023 doublings; still exact.
  assert.equal(backoffDelayMs(1e6, Number.MIN_VALUE, Number.MAX_VALUE), Number.MAX_VALUE);
  assert.equal(backoffDelayMs(2076, Number.MIN_VALUE, Number.MAX_VALUE), 2 ** 1001);
});

test("scaling is exact for fractional bases (no precision loss)", () => {
  assert.equal(backoffDelayMs(11, 0.1, 1e6), 0.1 * 1024);
  assert.equal(backoffDelayMs(53, 1, 2 ** 60), 2 ** 52);
});

test("bad attempts are RangeErrors naming the argument", () => {
  for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
    assert.throws(() => backoffDelayMs(bad, 2, 300), { name: "RangeError", message: /attempt/ }, String(bad));
    const policy = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none" });
    assert.throws(() => policy.next(bad, 0), { name: "RangeError", message: /attempt/ }, String(bad));
    assert.throws(() => policy.delayMs(bad), { name: "RangeError", message: /attempt/ }, String(bad));
  }
});

test("base and cap must be positive finite, and the cap at least the base", () => {
  for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => backoffDelayMs(1, bad, 300), { name: "RangeError", message: /baseMs/ });
    assert.throws(() => backoffDelayMs(1, 2, bad), { name: "RangeError", message: /capMs/ });
    assert.throws(() => new BackoffPolicy({ baseMs: bad, capMs: 300, jitter: "none" }), /baseMs/);
    assert.throws(() => new BackoffPolicy({ baseMs: 2, capMs: bad, jitter: "none" }), /capMs/);
  }
  assert.throws(() => backoffDelayMs(1, 10, 5), /capMs \(5\) must be >= baseMs \(10\)/);
});

test("policy options are validated at construction", () => {
  const random = seededRandom(1);
  assert.throws(() => new BackoffPolicy({ baseMs: 1, capMs: 2, jitter: "none", budgetMs: 0 }), /budgetMs/);
  assert.throws(
    () => new BackoffPolicy({ baseMs: 1, capMs: 2, jitter: "none", budgetMs: Number.NaN }),
    /budgetMs/,
  );
  assert.throws(
    () => new BackoffPolicy({ baseMs: 1, capMs: 2, jitter: "none", maxAttempts: 0 }),
    /maxAttempts/,
  );
  assert.throws(
    () => new BackoffPolicy({ baseMs: 1, capMs: 2, jitter: "none", maxAttempts: 2.5 }),
    /maxAttempts/,
  );
  // @ts-expect-error the type demands a random source for jitter; the runtime check backs it up
  assert.throws(() => new BackoffPolicy({ baseMs: 1, capMs: 2, jitter: "full" }), /needs a random source/);
  // @ts-expect-error not a jitter mode
  assert.throws(() => new BackoffPolicy({ baseMs: 1, capMs: 2, jitter: "wild", random }), /jitter/);
});

test("full jitter stays in [0, delay) and equal jitter in [delay/2, delay)", () => {
  const random = seededRandom("jitter-bounds");
  const full = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "full", random });
  const equal = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "equal", random });
  for (let n = 1; n <= 40; n++) {
    const delay = backoffDelayMs(n, 2, 300);
    for (let i = 0; i < 200; i++) {
      const f = full.delayMs(n);
      assert.ok(f >= 0 && f <= delay, `full ${f} outside [0, ${delay}]`);
      const e = equal.delayMs(n);
      assert.ok(e >= delay / 2 && e <= delay, `equal ${e} outside [${delay / 2}, ${delay}]`);
    }
  }
});

test("jitter actually spreads: full jitter's mean is near delay/2, equal's near 3/4·delay", () => {
  const random = seededRandom("jitter-spread");
  const n = 20_000;
  let fullSum = 0;
  let equalSum = 0;
  for (let i = 0; i < n; i++) {
    fullSum += jitterDelayMs(300, "full", random);
    equalSum += jitterDelayMs(300, "equal", random);
  }
  assert.ok(Math.abs(fullSum / n - 150) < 3, `full mean ${fullSum / n}`);
  assert.ok(Math.abs(equalSum / n - 225) < 2, `equal mean ${equalSum / n}`);
  assert.equal(jitterDelayMs(300, "none", random), 300);
  assert.throws(() => jitterDelayMs(-1, "full", random), /delayMs/);
});

test("003 exercise: a seeded jitter source makes the retry schedule reproducible in tests", () => {
  const schedule = (seed: string) => {
    const policy = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "full", random: seededRandom(seed) });
    return Array.from({ length: 12 }, (_, i) => policy.delayMs(i + 1));
  };
  assert.deepEqual(schedule("tenant-a"), schedule("tenant-a"));
  assert.notDeepEqual(schedule("tenant-a"), schedule("tenant-b"));
});

test("jittered retries from many clients do not land together (the synchronised-spike problem)", () => {
  // 1000 clients all failing at t=0: without jitter they all retry at exactly 2 ms.
  const random = seededRandom("herd");
  const plain = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none" });
  const spread = new BackoffPolicy({ baseMs: 2_000, capMs: 300_000, jitter: "full", random });
  const plainSlots = new Set(Array.from({ length: 1_000 }, () => plain.delayMs(1)));
  const spreadSlots = new Set(Array.from({ length: 1_000 }, () => Math.floor(spread.delayMs(1) / 100)));
  assert.equal(plainSlots.size, 1);
  assert.equal(spreadSlots.size, 20, "full jitter fills every 100 ms slot of the 2 s window");
});

test("next() retries with the delay while the budget allows, and gives up when it would be exceeded", () => {
  const policy = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none", budgetMs: 100 });
  assert.deepEqual(policy.next(1, 0), { retry: true, delayMs: 2 });
  assert.deepEqual(policy.next(6, 36), { retry: true, delayMs: 64 }, "36 + 64 = 100 fits exactly");
  assert.deepEqual(policy.next(6, 37), { retry: false, reason: "budget-exhausted" });
  assert.deepEqual(policy.next(1, 100), { retry: false, reason: "budget-exhausted" });
  assert.throws(() => policy.next(1, -1), { name: "RangeError", message: /elapsedMs/ });
  assert.throws(() => policy.next(1, Number.NaN), { name: "RangeError", message: /elapsedMs/ });
});

test("next() gives up after maxAttempts attempts in total", () => {
  const policy = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none", maxAttempts: 3 });
  assert.equal(policy.next(1, 0).retry, true);
  assert.equal(policy.next(2, 0).retry, true);
  assert.deepEqual(policy.next(3, 0), { retry: false, reason: "max-attempts" });
  const once = new BackoffPolicy({ baseMs: 2, capMs: 300, jitter: "none", maxAttempts: 1 });
  assert.deepEqual(once.next(1, 0), { retry: false, reason: "max-attempts" });
});

test("a simulated retry loop is bounded by the budget and its waits sum within it", () => {
  const policy = new BackoffPolicy({
    baseMs: 2_000,
    capMs: 300_000,
    jitter: "equal",
    random: seededRandom("loop"),
    budgetMs: 24 * 3_600_000, // 003: retry for at most 24 hours
  });
  const attemptMs = 10_000; // each attempt times out after 10 s
  let elapsedMs = 0;
  let decision: BackoffDecision = { retry: true, delayMs: 0 };
  let attempts = 0;
  while (decision.retry) {
    attempts++;
    elapsedMs += decision.delayMs + attemptMs;
    decision = policy.next(attempts, elapsedMs);
    assert.ok(attempts < 10_000, "loop must terminate");
  }
  assert.equal(decision.reason, "budget-exhausted");
  assert.ok(elapsedMs <= 24 * 3_600_000 + attemptMs, `elapsed ${elapsedMs}`);
  assert.ok(attempts > 300 && attempts < 600, `attempts ${attempts}`);
});

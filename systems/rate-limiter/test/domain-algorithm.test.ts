import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { test } from "node:test";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import fc from "fast-check";
import {
  type Algorithm,
  type AlgorithmName,
  algorithmNames,
  type Decision,
  decideAll,
  decideEach,
  type Limit,
  limitBounds,
  maxCost,
  msUntilMicro,
  storedBytes,
  validateCall,
  validateLimit,
  validateRequestId,
} from "../src/domain/algorithm.ts";
import { algorithms } from "../src/domain/algorithms.ts";
import { scriptsDir } from "../src/store/limiter-store.ts";

// Fixed for reproducible runs; FC_SEED explores other sequences.
const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const RUNS = 150;
/** Awkward rates on purpose: 1/3 and 100/60 are not exact in binary. */
const RATES_PER_S = [0.5, 1 / 3, 100 / 60, 2, 7, 1000, 0.01];
const WINDOWS_MS = [1, 7, 100, 1_000, 60_000];

const limitArbitraries: Record<AlgorithmName, fc.Arbitrary<Limit>> = {
  "token-bucket": fc.record({
    algorithm: fc.constant("token-bucket" as const),
    capacity: fc.integer({ min: 1, max: 10 }),
    ratePerS: fc.constantFrom(...RATES_PER_S),
  }),
  "fixed-window": fc.record({
    algorithm: fc.constant("fixed-window" as const),
    limit: fc.integer({ min: 1, max: 10 }),
    windowMs: fc.constantFrom(...WINDOWS_MS),
  }),
  "sliding-window-log": fc.record({
    algorithm: fc.constant("sliding-window-log" as const),
    limit: fc.integer({ min: 1, max: 10 }),
    windowMs: fc.constantFrom(...WINDOWS_MS),
  }),
  "sliding-window-counter": fc.record({
    algorithm: fc.constant("sliding-window-counter" as const),
    limit: fc.integer({ min: 1, max: 10 }),
    windowMs: fc.constantFrom(...WINDOWS_MS),
  }),
  "leaky-bucket": fc.record({
    algorithm: fc.constant("leaky-bucket" as const),
    queueCapacity: fc.integer({ min: 1, max: 10 }),
    ratePerS: fc.constantFrom(...RATES_PER_S),
  }),
  gcra: fc.record({
    algorithm: fc.constant("gcra" as const),
    burst: fc.integer({ min: 1, max: 10 }),
    ratePerS: fc.constantFrom(...RATES_PER_S),
  }),
};

interface Step {
  dtMs: number;
  costPick: number;
  refundPrevious: boolean;
}

const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  dtMs: fc.oneof(
    fc.constant(0),
    fc.integer({ min: 0, max: 50 }),
    fc.integer({ min: 0, max: 5_000 }),
    fc.integer({ min: 0, max: 200_000 }),
  ),
  costPick: fc.nat({ max: 1_000 }),
  refundPrevious: fc.boolean(),
});

interface Visit {
  state: unknown;
  nowMs: number;
  cost: number;
  requestId: string;
  decision: Decision<unknown>;
}

type AnyAlgorithm = Algorithm<Limit, unknown>;

/** Plays `steps` from an empty key; calls `visit` before each decision is applied. */
function play(
  algorithm: AnyAlgorithm,
  limit: Limit,
  startMs: number,
  steps: Step[],
  visit: (v: Visit) => void,
) {
  let state: unknown;
  let nowMs = startMs;
  let previous: { cost: number; requestId: string } | undefined;
  steps.forEach((step, index) => {
    nowMs += step.dtMs;
    if (step.refundPrevious && previous !== undefined) {
      state = algorithm.refund(state, nowMs, limit, previous.cost, previous.requestId);
      previous = undefined;
      return;
    }
    const cost = 1 + (step.costPick % maxCost(limit));
    const requestId = `r${index}`;
    const decision = algorithm.decide(state, nowMs, limit, cost, requestId);
    visit({ state, nowMs, cost, requestId, decision });
    if (decision.allowed) {
      state = decision.state;
      previous = { cost, requestId };
    }
  });
}

/** One fast-check property per algorithm over random call sequences. */
function forEveryAlgorithm(
  check: (algorithm: AnyAlgorithm, limit: Limit, startMs: number, steps: Step[]) => void,
) {
  for (const name of algorithmNames) {
    const algorithm = algorithms[name] as unknown as AnyAlgorithm;
    fc.assert(
      fc.property(
        limitArbitraries[name],
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        fc.array(stepArbitrary, { maxLength: 60, size: "large" }),
        (limit, startMs, steps) => check(algorithm, limit, startMs, steps),
      ),
      { seed: SEED, numRuns: RUNS },
    );
  }
}

const decisionFields = (d: Decision<unknown>) => ({
  allowed: d.allowed,
  remaining: d.remaining,
  retryAfterMs: d.retryAfterMs,
  resetMs: d.resetMs,
  delayMs: d.delayMs,
});

test("every algorithm: a refused request never spends (state comes back unchanged)", () => {
  forEveryAlgorithm((algorithm, limit, startMs, steps) => {
    play(algorithm, limit, startMs, steps, ({ state, decision }) => {
      if (!decision.allowed) {
        assert.equal(decision.state, state);
        assert.ok(decision.retryAfterMs > 0);
        assert.equal(decision.delayMs, 0);
      } else {
        assert.equal(decision.retryAfterMs, 0);
      }
    });
  });
});

test("every algorithm: retryAfterMs is exact — the same call passes after it and not 1 ms before", () => {
  forEveryAlgorithm((algorithm, limit, startMs, steps) => {
    play(algorithm, limit, startMs, steps, ({ state, nowMs, cost, decision }) => {
      if (decision.allowed) return;
      const at = (t: number) => algorithm.decide(state, t, limit, cost, "retry-probe").allowed;
      assert.equal(at(nowMs + decision.retryAfterMs), true, `retry after ${decision.retryAfterMs} ms`);
      assert.equal(at(nowMs + decision.retryAfterMs - 1), false, `not before ${decision.retryAfterMs} ms`);
    });
  });
});

test("RL-06 every algorithm: at ttlMs the stored state decides exactly like a missing key (expiry is invisible)", () => {
  forEveryAlgorithm((algorithm, limit, startMs, steps) => {
    play(algorithm, limit, startMs, steps, ({ nowMs, cost, decision }) => {
      if (!decision.allowed) return;
      assert.ok(decision.ttlMs >= 1);
      assert.equal(decision.ttlMs, algorithm.ttlMs(decision.state, nowMs, limit));
      const at = nowMs + decision.ttlMs;
      const kept = algorithm.decide(decision.state, at, limit, cost, "after-ttl");
      const fresh = algorithm.decide(undefined, at, limit, cost, "after-ttl");
      assert.deepEqual(decisionFields(kept), decisionFields(fresh));
      assert.deepEqual(kept.state, fresh.state);
    });
  });
});

test("every algorithm: after resetMs the key decides exactly like a fresh one", () => {
  forEveryAlgorithm((algorithm, limit, startMs, steps) => {
    play(algorithm, limit, startMs, steps, ({ state, nowMs, cost, decision }) => {
      const current = decision.allowed ? decision.state : state;
      const at = nowMs + decision.resetMs;
      const kept = algorithm.decide(current, at, limit, cost, "after-reset");
      const fresh = algorithm.decide(undefined, at, limit, cost, "after-reset");
      assert.deepEqual(decisionFields(kept), decisionFields(fresh));
    });
  });
});

test("every algorithm: a refund right after a spend restores the key's decisions", () => {
  forEveryAlgorithm((algorithm, limit, startMs, steps) => {
    play(algorithm, limit, startMs, steps, ({ state, nowMs, cost, requestId, decision }) => {
      if (!decision.allowed) return;
      const refunded = algorithm.refund(decision.state, nowMs, limit, cost, requestId);
      for (const probeCost of [1, maxCost(limit)]) {
        const before = decisionFields(algorithm.decide(state, nowMs, limit, probeCost, "probe"));
        const after = decisionFields(algorithm.decide(refunded, nowMs, limit, probeCost, "probe"));
        assert.deepEqual([after.allowed, after.remaining], [before.allowed, before.remaining]);
        // The buckets re-base their lazy refill at the refund's write (floor(elapsed × rate) is
        // not additive), so a wait may move by the one ms of a sub-micro-token remainder.
        for (const field of ["retryAfterMs", "resetMs", "delayMs"] as const) {
          assert.ok(
            Math.abs(after[field] - before[field]) <= 1,
            `${field}: ${before[field]} → ${after[field]}`,
          );
        }
      }
    });
  });
});

test("every algorithm: stored form round-trips and its byte count is field names plus decimal values", () => {
  forEveryAlgorithm((algorithm, limit, startMs, steps) => {
    play(algorithm, limit, startMs, steps, ({ decision }) => {
      const stored = algorithm.toStored(decision.state, limit);
      const back = algorithm.fromStored(stored, limit);
      const empty = stored.kind === "zset" && stored.entries.length === 0;
      assert.deepEqual(back, empty ? undefined : decision.state);
      assert.ok(storedBytes(stored) >= 0);
    });
  });
});

test("decideAll is all-or-nothing and reports the largest refusal's retryAfterMs", () => {
  const tb = algorithms["token-bucket"];
  const user = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 } as const;
  const ip = { algorithm: "token-bucket", capacity: 1, ratePerS: 0.25 } as const;
  const spentIp = tb.decide(undefined, 0, ip, 1).state;
  const both = decideAll(tb, 0, [
    { state: undefined, limit: user, cost: 1 },
    { state: spentIp, limit: ip, cost: 1 },
  ]);
  assert.equal(both.allowed, false);
  assert.equal(both.retryAfterMs, 4_000);
  assert.equal(both.decisions[0]?.allowed, true, "user alone would pass");
  assert.equal(both.decisions[1]?.allowed, false);
  const fresh = decideAll(tb, 0, [
    { state: undefined, limit: user, cost: 1 },
    { state: undefined, limit: ip, cost: 1 },
  ]);
  assert.deepEqual([fresh.allowed, fresh.retryAfterMs], [true, 0]);
  assert.throws(() => decideAll(tb, 0, []), /calls.length/);
  const gcra = { algorithm: "gcra", burst: 1, ratePerS: 1 } as const;
  assert.throws(
    () => decideAll(tb, 0, [{ state: undefined, limit: gcra as unknown as typeof user, cost: 1 }]),
    /limit.algorithm must be token-bucket/,
  );
});

test("decideEach: keys are independent, and calls on one key are decided in turn on what the last allowed one left", () => {
  for (const name of algorithmNames) {
    const algorithm = algorithms[name] as unknown as AnyAlgorithm;
    fc.assert(
      fc.property(
        fc.array(limitArbitraries[name], { minLength: 3, maxLength: 3 }),
        fc.integer({ min: 0, max: 2_000_000_000_000 }),
        fc.array(fc.record({ keyIndex: fc.nat({ max: 2 }), costPick: fc.nat({ max: 1_000 }) }), {
          minLength: 1,
          maxLength: 30,
        }),
        (limits, nowMs, picks) => {
          const calls = picks.map(({ keyIndex, costPick }, j) => ({
            key: `k${keyIndex}`,
            state: undefined,
            limit: limits[keyIndex]!,
            cost: 1 + (costPick % maxCost(limits[keyIndex]!)),
            requestId: `r${j}`,
          }));
          const decisions = decideEach(algorithm, nowMs, calls);
          // Reference: each key on its own, as a plain fold over its calls (other keys interleaved or not).
          for (const key of ["k0", "k1", "k2"]) {
            let state: unknown;
            calls.forEach((call, j) => {
              if (call.key !== key) return;
              const alone = algorithm.decide(state, nowMs, call.limit, call.cost, call.requestId);
              assert.deepEqual(decisions[j], alone, `call ${j} on ${key}`);
              if (alone.allowed) state = alone.state;
            });
          }
        },
      ),
      { seed: SEED, numRuns: RUNS },
    );
  }
});

test("decideEach: a refusal stops nothing (unlike decideAll), a repeat sees the write, bounds and algorithm are checked", () => {
  const tb = algorithms["token-bucket"];
  const limit = { algorithm: "token-bucket", capacity: 1, ratePerS: 1 } as const;
  const spent = tb.decide(undefined, 0, limit, 1).state;
  const calls = [
    { key: "u1", state: spent, limit, cost: 1 },
    { key: "u2", state: undefined, limit, cost: 1 },
    { key: "u2", state: undefined, limit, cost: 1 }, // its own state is ignored: the first call on u2 supplied it
  ];
  const each = decideEach(tb, 0, calls);
  assert.deepEqual(
    each.map((d) => [d.allowed, d.remaining, d.retryAfterMs]),
    [
      [false, 0, 1_000],
      [true, 0, 0],
      [false, 0, 1_000],
    ],
  );
  assert.equal(decideAll(tb, 0, calls.slice(0, 2)).allowed, false, "all-or-nothing would refuse u2 too");
  const other = { key: "u3", state: spent, limit, cost: 1 };
  assert.deepEqual(
    decideEach(tb, 1_000, [other, other]).map((d) => d.allowed),
    [true, false],
    "a refill of one token serves only the first",
  );
  assert.throws(() => decideEach(tb, 0, []), /calls.length/);
  const tooMany = Array.from({ length: limitBounds.maxCallsPerEach + 1 }, () => other);
  assert.throws(() => decideEach(tb, 0, tooMany), /calls.length/);
  assert.equal(decideEach(tb, 0, tooMany.slice(1)).length, limitBounds.maxCallsPerEach);
  const gcra = { algorithm: "gcra", burst: 1, ratePerS: 1 } as const;
  assert.throws(
    () =>
      decideEach(tb, 0, [{ key: "g", state: undefined, limit: gcra as unknown as typeof limit, cost: 1 }]),
    /limit.algorithm must be token-bucket/,
  );
});

test("invalid limit params are rejected with a RangeError naming the field", () => {
  const cases: [unknown, RegExp][] = [
    [{ algorithm: "token-bucket", capacity: 0, ratePerS: 1 }, /^RangeError: limit\.capacity /],
    [{ algorithm: "token-bucket", capacity: 1.5, ratePerS: 1 }, /limit\.capacity/],
    [{ algorithm: "token-bucket", capacity: 5, ratePerS: 0 }, /limit\.ratePerS/],
    [{ algorithm: "token-bucket", capacity: 5, ratePerS: Number.NaN }, /limit\.ratePerS/],
    [{ algorithm: "token-bucket", capacity: 5, ratePerS: "1" }, /limit\.ratePerS/],
    [{ algorithm: "token-bucket", capacity: 1_000_000, ratePerS: 0.001 }, /limit\.ratePerS is too slow/],
    [{ algorithm: "fixed-window", limit: -1, windowMs: 1_000 }, /limit\.limit/],
    [{ algorithm: "fixed-window", limit: 10, windowMs: 0 }, /limit\.windowMs/],
    [{ algorithm: "sliding-window-counter", limit: 10, windowMs: 2e9 }, /limit\.windowMs/],
    [{ algorithm: "sliding-window-log", limit: 20_000, windowMs: 1_000 }, /limit\.limit .*10000/],
    [{ algorithm: "leaky-bucket", queueCapacity: 0, ratePerS: 1 }, /limit\.queueCapacity/],
    [{ algorithm: "gcra", burst: 5, ratePerS: 2e6 }, /limit\.ratePerS/],
    [{ algorithm: "gcra", burst: 0, ratePerS: 1 }, /limit\.burst/],
    [{ algorithm: "nope" }, /limit\.algorithm must be one of/],
  ];
  for (const [limit, message] of cases) {
    assert.throws(
      () => validateLimit(limit as Limit),
      (error: unknown) => {
        assert.ok(error instanceof RangeError);
        assert.match(String(error), message);
        return true;
      },
    );
  }
});

test("invalid call inputs are rejected naming the field: cost, nowMs, requestId", () => {
  const limit = { algorithm: "token-bucket", capacity: 5, ratePerS: 1 } as const;
  assert.throws(() => validateCall(limit, 0, 0), /^RangeError: cost must be an integer in \[1, 5\]/);
  assert.throws(() => validateCall(limit, 0, 6), /cost/);
  assert.throws(() => validateCall(limit, 0, 1.5), /cost/);
  assert.throws(() => validateCall(limit, -1, 1), /nowMs/);
  assert.throws(() => validateCall(limit, 0.5, 1), /nowMs/);
  assert.throws(() => validateRequestId(undefined), /requestId/);
  assert.throws(() => validateRequestId("has space"), /requestId/);
  assert.throws(() => validateRequestId("x".repeat(129)), /requestId/);
  assert.equal(validateRequestId("9b2f-41:x"), "9b2f-41:x");
  for (const name of algorithmNames) {
    const algorithm = algorithms[name] as unknown as AnyAlgorithm;
    const bad = {
      algorithm: name,
      capacity: 0,
      limit: 0,
      queueCapacity: 0,
      burst: 0,
      ratePerS: 1,
      windowMs: 1,
    };
    assert.throws(() => algorithm.decide(undefined, 0, bad as Limit, 1, "r"), RangeError, name);
    assert.throws(() => algorithm.refund(undefined, 0, bad as Limit, 1, "r"), RangeError, name);
  }
});

test("msUntilMicro is the least whole ms whose floored refill covers the deficit", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 1e12 }),
      fc.oneof(fc.constantFrom(...RATES_PER_S), fc.double({ min: 0.001, max: 1e6, noNaN: true })),
      (deficit, ratePerS) => {
        const rate = ratePerS * 1000;
        const ms = msUntilMicro(deficit, rate);
        assert.ok(Math.floor(ms * rate) >= deficit);
        assert.ok(Math.floor((ms - 1) * rate) < deficit);
      },
    ),
    { seed: SEED, numRuns: 5_000 },
  );
  assert.equal(msUntilMicro(0, 500), 0);
  // Found by the retry property: 5_432_000 / (1000/3) rounds to 16296.000000000002, yet
  // floor(16296 × 333.333…) already reaches 5_432_000.
  assert.equal(msUntilMicro(5_432_000, (1 / 3) * 1000), 16_296);
});

test("the registry names one script per algorithm, with the ARGV stride its header documents", async () => {
  const scripts = await ScriptRegistry.fromDir(scriptsDir);
  for (const name of algorithmNames) {
    const algorithm = algorithms[name];
    assert.equal(algorithm.name, name);
    assert.equal(algorithm.scriptName, `${name}-n.lua`);
    const path = new URL(`../src/store/scripts/${algorithm.scriptName}`, import.meta.url);
    assert.ok(existsSync(path), `${algorithm.scriptName} exists`);
    const source = readFileSync(path, "utf8");
    assert.match(source, new RegExp(`stride ${algorithm.argvStride}`));
    assert.match(source, /^-- KEYS\[1\.\.\] /m, "variadic keys, the registry's -n.lua contract");
    assert.match(source, /^-- Returns/m);
    // The server's TIME comes from an include: checked on the script as Redis runs it.
    assert.match(scripts.get(name).lua, /redis\.call\('TIME'\)/);
  }
});

import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { GcraLimit } from "../src/domain/algorithm.ts";
import { type GcraState, gcra, gcraIntervalUs } from "../src/domain/gcra.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
/** Same shape as the text's bucket: 5 at once, then 0.5/s. */
const LIMIT: GcraLimit = { algorithm: "gcra", burst: 5, ratePerS: 0.5 };

test("bursts up to `burst`, then one unit per emission interval", () => {
  let state: GcraState | undefined;
  const remaining: number[] = [];
  for (let i = 0; i < 5; i++) {
    const d = gcra.decide(state, 1_000, LIMIT, 1);
    assert.equal(d.allowed, true);
    remaining.push(d.remaining);
    state = d.state;
  }
  assert.deepEqual(remaining, [4, 3, 2, 1, 0]);
  assert.deepEqual(state, { tatUs: 11_000_000 }, "TAT = now + 5 × 2 s");
  const sixth = gcra.decide(state, 1_000, LIMIT, 1);
  assert.deepEqual([sixth.allowed, sixth.retryAfterMs, sixth.resetMs], [false, 2_000, 10_000]);
  for (let second = 2; second <= 12; second++) {
    const d = gcra.decide(state, 1_000 + second * 1_000, LIMIT, 1);
    assert.equal(d.allowed, second % 2 === 0, `at +${second} s`);
    if (d.allowed) state = d.state;
  }
});

test("the emission interval is whole µs: exact for 100/min, rounded for 3000/s", () => {
  assert.equal(gcraIntervalUs({ algorithm: "gcra", burst: 1, ratePerS: 100 / 60 }), 600_000);
  assert.equal(gcraIntervalUs({ algorithm: "gcra", burst: 1, ratePerS: 3_000 }), 333);
  assert.equal(gcraIntervalUs({ algorithm: "gcra", burst: 1, ratePerS: 1_000_000 }), 1);
});

test("RL-05 a TAT ahead of a clock that stepped back is kept: nothing is minted", () => {
  const state = { tatUs: 60_000_000 };
  const back = gcra.decide(state, 40_000, LIMIT, 1);
  assert.equal(back.allowed, false);
  assert.equal(back.retryAfterMs, 62_000 - 10_000 - 40_000);
});

test("weighted cost and refund", () => {
  const d = gcra.decide(undefined, 0, LIMIT, 3);
  assert.deepEqual([d.allowed, d.remaining, d.state], [true, 2, { tatUs: 6_000_000 }]);
  assert.equal(gcra.decide(d.state, 0, LIMIT, 3).allowed, false);
  assert.deepEqual(gcra.refund(d.state, 0, LIMIT, 3), { tatUs: 0 });
  assert.deepEqual(gcra.refund(d.state, 5_000, LIMIT, 3), { tatUs: 5_000_000 }, "never before now");
});

test("property: admitted ≤ burst + elapsed / interval", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(0.5, 1 / 3, 100 / 60, 4, 250, 3_000),
      fc.array(fc.record({ stepMs: fc.nat({ max: 3_000 }), cost: fc.integer({ min: 1, max: 20 }) }), {
        maxLength: 120,
        size: "large",
      }),
      (burst, ratePerS, calls) => {
        const limit: GcraLimit = { algorithm: "gcra", burst, ratePerS };
        const intervalUs = gcraIntervalUs(limit);
        let state: GcraState | undefined;
        const startMs = 3_000;
        let nowMs = startMs;
        let admitted = 0;
        for (const call of calls) {
          nowMs += call.stepMs;
          const cost = 1 + (call.cost % burst);
          const d = gcra.decide(state, nowMs, limit, cost);
          if (!d.allowed) continue;
          state = d.state;
          admitted += cost;
          assert.ok(admitted <= burst + ((nowMs - startMs) * 1000) / intervalUs + 1e-9);
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
});

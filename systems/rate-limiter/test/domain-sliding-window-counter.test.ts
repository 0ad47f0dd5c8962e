import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { SlidingWindowCounterLimit } from "../src/domain/algorithm.ts";
import {
  type SlidingWindowCounterState,
  slidingWindowCounter,
} from "../src/domain/sliding-window-counter.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const TEN_PER_S: SlidingWindowCounterLimit = {
  algorithm: "sliding-window-counter",
  limit: 10,
  windowMs: 1_000,
};

test("the estimate is previous × (remaining overlap) + current", () => {
  const state: SlidingWindowCounterState = { windowStartMs: 0, currentCount: 10, previousCount: 0 };
  // At 1250 the previous window (10) overlaps 75 % of the span: 7.5 used, room for 2.
  const first = slidingWindowCounter.decide(state, 1_250, TEN_PER_S, 1);
  assert.deepEqual([first.allowed, first.remaining], [true, 1]);
  assert.deepEqual(first.state, { windowStartMs: 1_000, currentCount: 1, previousCount: 10 });
  const second = slidingWindowCounter.decide(first.state, 1_250, TEN_PER_S, 1);
  assert.deepEqual([second.allowed, second.remaining], [true, 0]);
  const third = slidingWindowCounter.decide(second.state, 1_250, TEN_PER_S, 1);
  assert.equal(third.allowed, false);
  // 10 × (1000 − e)/1000 + 2 + 1 ≤ 10 ⇒ e ≥ 300 ⇒ at 1300.
  assert.equal(third.retryAfterMs, 50);
  assert.equal(slidingWindowCounter.decide(second.state, 1_300, TEN_PER_S, 1).allowed, true);
});

test("a full current window waits for the next one and for its own weight to decay", () => {
  let state: SlidingWindowCounterState | undefined;
  for (let i = 0; i < 10; i++) state = slidingWindowCounter.decide(state, 500, TEN_PER_S, 1).state;
  const refused = slidingWindowCounter.decide(state, 600, TEN_PER_S, 4);
  // Next window from 1000: 10 × (1000 − e)/1000 + 4 ≤ 10 ⇒ e ≥ 400 ⇒ at 1400.
  assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 800]);
  assert.equal(slidingWindowCounter.decide(state, 1_399, TEN_PER_S, 4).allowed, false);
  assert.equal(slidingWindowCounter.decide(state, 1_400, TEN_PER_S, 4).allowed, true);
  assert.equal(refused.resetMs, 2_000 - 600, "empty once the next window is over too");
});

test("counters older than one window are forgotten; refund takes back from the current window", () => {
  const state: SlidingWindowCounterState = { windowStartMs: 0, currentCount: 7, previousCount: 3 };
  assert.deepEqual(slidingWindowCounter.decide(state, 2_000, TEN_PER_S, 1).state, {
    windowStartMs: 2_000,
    currentCount: 1,
    previousCount: 0,
  });
  assert.deepEqual(slidingWindowCounter.refund(state, 10, TEN_PER_S, 2), {
    windowStartMs: 0,
    currentCount: 5,
    previousCount: 3,
  });
});

test("RL-05 a clock stepping back keeps the stored window and its full previous weight", () => {
  const state: SlidingWindowCounterState = { windowStartMs: 5_000, currentCount: 5, previousCount: 10 };
  const back = slidingWindowCounter.decide(state, 3_000, TEN_PER_S, 1);
  assert.equal(back.allowed, false, "10 × 1 + 5 + 1 > 10");
  assert.equal(back.state, state);
});

test("property: each aligned window admits ≤ limit, and the weighted estimate never exceeds it", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(10, 1_000, 60_000),
      fc.array(fc.record({ stepMs: fc.nat({ max: 2_000 }), cost: fc.integer({ min: 1, max: 20 }) }), {
        maxLength: 150,
        size: "large",
      }),
      (limitUnits, windowMs, calls) => {
        const limit: SlidingWindowCounterLimit = {
          algorithm: "sliding-window-counter",
          limit: limitUnits,
          windowMs,
        };
        let state: SlidingWindowCounterState | undefined;
        let nowMs = 7_777;
        const admitted: { atMs: number; units: number }[] = [];
        const sum = (from: number, to: number) =>
          admitted.filter((a) => a.atMs >= from && a.atMs < to).reduce((s, a) => s + a.units, 0);
        for (const call of calls) {
          nowMs += call.stepMs;
          const cost = 1 + (call.cost % limitUnits);
          const d = slidingWindowCounter.decide(state, nowMs, limit, cost);
          if (!d.allowed) continue;
          state = d.state;
          admitted.push({ atMs: nowMs, units: cost });
          const startMs = nowMs - (nowMs % windowMs);
          const current = sum(startMs, Number.POSITIVE_INFINITY);
          const previous = sum(startMs - windowMs, startMs);
          assert.ok(current <= limitUnits);
          assert.ok(previous * (windowMs - (nowMs - startMs)) + current * windowMs <= limitUnits * windowMs);
          assert.ok(sum(nowMs - windowMs + 1, Number.POSITIVE_INFINITY) <= 2 * limitUnits);
        }
      },
    ),
    { seed: SEED, numRuns: 200 },
  );
});

import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { LeakyBucketLimit } from "../src/domain/algorithm.ts";
import { type LeakyBucketState, leakyBucket } from "../src/domain/leaky-bucket.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const TWO_PER_S: LeakyBucketLimit = { algorithm: "leaky-bucket", queueCapacity: 5, ratePerS: 2 };

test("a burst is admitted with delays spaced uniformly at 1 / rate; past the queue it is refused", () => {
  let state: LeakyBucketState | undefined;
  const delays: number[] = [];
  for (let i = 0; i < 6; i++) {
    const d = leakyBucket.decide(state, 10_000, TWO_PER_S, 1);
    if (i < 5) {
      assert.equal(d.allowed, true);
      assert.equal(d.remaining, 4 - i);
      delays.push(d.delayMs);
      state = d.state;
    } else {
      assert.deepEqual([d.allowed, d.delayMs, d.retryAfterMs], [false, 0, 500]);
      assert.equal(d.state, state);
    }
  }
  assert.deepEqual(delays, [0, 500, 1_000, 1_500, 2_000]);
  const later = leakyBucket.decide(state, 10_500, TWO_PER_S, 1);
  assert.deepEqual([later.allowed, later.delayMs], [true, 2_000], "one drained, the newcomer goes last");
});

test("the queue drains lazily; a drained queue is an empty one", () => {
  const full = { levelMicro: 5_000_000, tsMs: 0 };
  const d = leakyBucket.decide(full, 10_000, TWO_PER_S, 1);
  assert.deepEqual([d.allowed, d.delayMs, d.state], [true, 0, { levelMicro: 1_000_000, tsMs: 10_000 }]);
  assert.equal(d.resetMs, 500);
});

test("RL-05 a clock stepping back drains nothing", () => {
  const full = { levelMicro: 5_000_000, tsMs: 50_000 };
  const back = leakyBucket.decide(full, 40_000, TWO_PER_S, 1);
  assert.equal(back.allowed, false);
  assert.equal(back.retryAfterMs, 50_500 - 40_000);
});

test("weighted cost and refund", () => {
  const d = leakyBucket.decide(undefined, 0, TWO_PER_S, 4);
  assert.deepEqual([d.allowed, d.remaining, d.resetMs], [true, 1, 2_000]);
  const refused = leakyBucket.decide(d.state, 0, TWO_PER_S, 2);
  assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 500]);
  assert.deepEqual(leakyBucket.refund(d.state, 0, TWO_PER_S, 4), { levelMicro: 0, tsMs: 0 });
});

test("property: admitted ≤ queueCapacity + rate × elapsed, and output is never faster than the rate", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(0.5, 1 / 3, 100 / 60, 4, 250),
      fc.array(fc.record({ stepMs: fc.nat({ max: 3_000 }), cost: fc.integer({ min: 1, max: 20 }) }), {
        maxLength: 120,
        size: "large",
      }),
      (queueCapacity, ratePerS, calls) => {
        const limit: LeakyBucketLimit = { algorithm: "leaky-bucket", queueCapacity, ratePerS };
        let state: LeakyBucketState | undefined;
        const startMs = 3_000;
        let nowMs = startMs;
        let admitted = 0;
        let last: { departMs: number; cost: number } | undefined;
        for (const call of calls) {
          nowMs += call.stepMs;
          const cost = 1 + (call.cost % queueCapacity);
          const d = leakyBucket.decide(state, nowMs, limit, cost);
          if (!d.allowed) continue;
          state = d.state;
          admitted += cost;
          assert.ok(admitted <= queueCapacity + (ratePerS * (nowMs - startMs)) / 1000 + 1e-9);
          const departMs = nowMs + d.delayMs;
          if (last) {
            // The previous request's units take cost / rate to leave; rounding to whole ms costs ≤ 1 ms.
            assert.ok(
              departMs - last.departMs >= (last.cost / ratePerS) * 1000 - 1,
              `${last.departMs} → ${departMs}`,
            );
          }
          last = { departMs, cost };
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
});

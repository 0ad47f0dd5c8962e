import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { TokenBucketLimit } from "../src/domain/algorithm.ts";
import { type TokenBucketState, tokenBucket } from "../src/domain/token-bucket.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
/** The text's example: capacity 5, refill 0.5 token/s. */
const TEXT_LIMIT: TokenBucketLimit = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 };

/** Runs `count` calls of `cost` at `nowMs`, returning the decisions and the final state. */
function burst(
  state: TokenBucketState | undefined,
  nowMs: number,
  count: number,
  limit = TEXT_LIMIT,
  cost = 1,
) {
  const decisions = [];
  let current = state;
  for (let i = 0; i < count; i++) {
    const decision = tokenBucket.decide(current, nowMs, limit, cost);
    decisions.push(decision);
    if (decision.allowed) current = decision.state;
  }
  return { decisions, state: current };
}

test("RL-01 capacity 5 at 0.5/s: five calls pass with remaining 4,3,2,1,0; the sixth is refused with retry = ceil((cost − tokens)/rate·1000)", () => {
  const { decisions, state } = burst(undefined, 1_000_000, 6);
  assert.deepEqual(
    decisions.slice(0, 5).map((d) => [d.allowed, d.remaining, d.retryAfterMs]),
    [4, 3, 2, 1, 0].map((remaining) => [true, remaining, 0]),
  );
  const sixth = decisions[5]!;
  assert.equal(sixth.allowed, false);
  assert.equal(sixth.remaining, 0);
  const tokens = state!.tokensMicro / 1_000_000;
  assert.equal(sixth.retryAfterMs, Math.ceil(((1 - tokens) / 0.5) * 1000));
  assert.ok(sixth.retryAfterMs > 0 && sixth.retryAfterMs <= 2000);
  assert.equal(sixth.retryAfterMs, 2000);
});

test("RL-01 the text's measured 1461 ms: the sixth call 539 ms after the burst waits ceil((1 − 0.2695)/0.5·1000)", () => {
  const { state } = burst(undefined, 0, 5);
  const sixth = tokenBucket.decide(state, 539, TEXT_LIMIT, 1);
  assert.equal(sixth.allowed, false);
  assert.equal(sixth.retryAfterMs, Math.ceil(((1 - 0.2695) / 0.5) * 1000));
  assert.equal(sixth.retryAfterMs, 1461);
  assert.ok(tokenBucket.decide(state, 539 + 1461, TEXT_LIMIT, 1).allowed);
});

test("RL-02 refill is lazy: after the burst of 5 at 0.5/s a client gets exactly one request every 2 s", () => {
  let { state } = burst(undefined, 0, 5);
  for (let second = 1; second <= 20; second++) {
    const nowMs = second * 1000;
    const decision = tokenBucket.decide(state, nowMs, TEXT_LIMIT, 1);
    // No timer ran between calls: the state is only what the last write left.
    assert.equal(decision.allowed, second % 2 === 0, `at ${second} s`);
    if (decision.allowed) {
      state = decision.state;
      assert.equal(decision.remaining, 0);
    } else {
      assert.equal(decision.retryAfterMs, 1000);
    }
  }
  // Idle for a long time, the bucket refills only up to its capacity.
  assert.equal(burst(state, 1_000_000, 6).decisions.filter((d) => d.allowed).length, 5);
});

test("RL-05 the engine clock stepping back 10 s mints no tokens", () => {
  const t0 = 100_000;
  const { state } = burst(undefined, t0, 5);
  const back = tokenBucket.decide(state, t0 - 10_000, TEXT_LIMIT, 1);
  assert.equal(back.allowed, false);
  assert.equal(back.remaining, 0);
  assert.equal(back.state, state, "nothing written");
  // Clamped elapsed: the wait is counted from the last write, not from the earlier clock.
  assert.equal(back.retryAfterMs, 12_000);
  // Once the clock is back where it was, still nothing has been minted.
  assert.equal(tokenBucket.decide(state, t0, TEXT_LIMIT, 1).allowed, false);
  assert.equal(tokenBucket.decide(state, t0 + 2_000, TEXT_LIMIT, 1).allowed, true);
});

test("RL-05 with arbitrary clock steps, back ones included, admitted tokens ≤ capacity + rate × (forward time only)", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(0.5, 1 / 3, 100 / 60, 4, 250),
      fc.array(
        fc.record({
          stepMs: fc.integer({ min: -30_000, max: 5_000 }),
          cost: fc.integer({ min: 1, max: 20 }),
        }),
        {
          maxLength: 80,
          size: "large",
        },
      ),
      (capacity, ratePerS, calls) => {
        const limit: TokenBucketLimit = { algorithm: "token-bucket", capacity, ratePerS };
        let state: TokenBucketState | undefined;
        let nowMs = 1_000_000_000;
        let forwardMs = 0;
        let admitted = 0;
        for (const call of calls) {
          nowMs += call.stepMs;
          forwardMs += Math.max(0, call.stepMs);
          const decision = tokenBucket.decide(state, nowMs, limit, 1 + (call.cost % capacity));
          if (decision.allowed) {
            admitted += 1 + (call.cost % capacity);
            state = decision.state;
          }
          assert.ok(admitted <= capacity + (ratePerS * forwardMs) / 1000 + 1e-9, `${admitted} admitted`);
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
});

test("property: over any sequence of time steps ≥ 0 and costs, admitted ≤ capacity + rate × elapsed", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 50 }),
      fc.constantFrom(0.5, 1 / 3, 100 / 60, 4, 250, 0.01),
      fc.array(fc.record({ stepMs: fc.nat({ max: 3_000 }), cost: fc.integer({ min: 1, max: 50 }) }), {
        maxLength: 100,
        size: "large",
      }),
      (capacity, ratePerS, calls) => {
        const limit: TokenBucketLimit = { algorithm: "token-bucket", capacity, ratePerS };
        let state: TokenBucketState | undefined;
        const startMs = 5_000;
        let nowMs = startMs;
        let admitted = 0;
        for (const call of calls) {
          nowMs += call.stepMs;
          const cost = 1 + (call.cost % capacity);
          const decision = tokenBucket.decide(state, nowMs, limit, cost);
          if (decision.allowed) {
            admitted += cost;
            state = decision.state;
          }
          assert.ok(admitted <= capacity + (ratePerS * (nowMs - startMs)) / 1000 + 1e-9);
          assert.ok(decision.remaining >= 0 && decision.remaining <= capacity);
        }
      },
    ),
    { seed: SEED, numRuns: 300 },
  );
});

test("RL-06 ttlMs is 2 × the time to refill completely (the text's PEXPIRE)", () => {
  const d = tokenBucket.decide(undefined, 0, TEXT_LIMIT, 1);
  assert.equal(d.ttlMs, 2 * Math.ceil((5 / 0.5) * 1000));
  assert.equal(d.ttlMs, 20_000);
  const odd: TokenBucketLimit = { algorithm: "token-bucket", capacity: 7, ratePerS: 3 };
  assert.equal(tokenBucket.ttlMs({ tokensMicro: 0, tsMs: 0 }, 0, odd), 2 * Math.ceil((7 / 3) * 1000));
  // By then the bucket is full again: an expired key decides like the stored one.
  const drained = burst(undefined, 0, 5).state;
  const later = tokenBucket.decide(drained, d.ttlMs, TEXT_LIMIT, 5);
  assert.deepEqual(later, tokenBucket.decide(undefined, d.ttlMs, TEXT_LIMIT, 5));
});

test("a refused request never spends: repeated refusals leave the stored state untouched", () => {
  const { state } = burst(undefined, 0, 5);
  for (let nowMs = 0; nowMs < 2_000; nowMs += 1) {
    const decision = tokenBucket.decide(state, nowMs, TEXT_LIMIT, 1);
    assert.equal(decision.allowed, false);
    assert.equal(decision.state, state);
  }
  // Hammering did not slow the refill: the token is there at 2 s sharp.
  assert.equal(tokenBucket.decide(state, 2_000, TEXT_LIMIT, 1).allowed, true);
});

test("refund gives the cost back, capped at capacity", () => {
  const spent = tokenBucket.decide(undefined, 0, TEXT_LIMIT, 3).state;
  assert.equal(spent.tokensMicro, 2_000_000);
  const refunded = tokenBucket.refund(spent, 0, TEXT_LIMIT, 3);
  assert.deepEqual(refunded, { tokensMicro: 5_000_000, tsMs: 0 });
  assert.deepEqual(tokenBucket.refund(refunded, 0, TEXT_LIMIT, 5), { tokensMicro: 5_000_000, tsMs: 0 });
  assert.deepEqual(tokenBucket.refund(undefined, 10, TEXT_LIMIT, 1), { tokensMicro: 5_000_000, tsMs: 10 });
});

test("weighted cost: a call costing 3 spends 3 tokens and waits for all 3", () => {
  const first = tokenBucket.decide(undefined, 0, TEXT_LIMIT, 3);
  assert.deepEqual([first.allowed, first.remaining], [true, 2]);
  const second = tokenBucket.decide(first.state, 0, TEXT_LIMIT, 3);
  assert.deepEqual([second.allowed, second.remaining, second.retryAfterMs], [false, 2, 2_000]);
  const third = tokenBucket.decide(first.state, 1_000, TEXT_LIMIT, 3);
  assert.deepEqual([third.allowed, third.retryAfterMs], [false, 1_000], "2.5 tokens at 1 s");
  assert.equal(tokenBucket.decide(first.state, 2_000, TEXT_LIMIT, 3).allowed, true);
});

test("invalid params are rejected naming the field", () => {
  assert.throws(() => tokenBucket.decide(undefined, 0, { ...TEXT_LIMIT, capacity: 0 }, 1), /limit\.capacity/);
  assert.throws(
    () => tokenBucket.decide(undefined, 0, { ...TEXT_LIMIT, ratePerS: -1 }, 1),
    /limit\.ratePerS/,
  );
  assert.throws(() => tokenBucket.decide(undefined, 0, TEXT_LIMIT, 6), /cost must be an integer in \[1, 5\]/);
  assert.throws(() => tokenBucket.decide(undefined, -5, TEXT_LIMIT, 1), /nowMs/);
  assert.throws(() => tokenBucket.refund(undefined, 0, TEXT_LIMIT, 0), /cost/);
});

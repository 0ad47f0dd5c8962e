import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { type SlidingWindowLogLimit, storedBytes } from "../src/domain/algorithm.ts";
import { type SlidingWindowLogState, slidingWindowLog } from "../src/domain/sliding-window-log.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const PER_MINUTE: SlidingWindowLogLimit = { algorithm: "sliding-window-log", limit: 100, windowMs: 60_000 };

test("exact across the boundary: 100 at the end of one minute, then nothing until they leave the span", () => {
  let state: SlidingWindowLogState | undefined;
  let admitted = 0;
  for (let i = 0; i < 200; i++) {
    const d = slidingWindowLog.decide(state, 59_000 + i * 10, PER_MINUTE, 1, `r${i}`);
    if (d.allowed) {
      admitted++;
      state = d.state;
    }
  }
  assert.equal(admitted, 100);
  const refused = slidingWindowLog.decide(state, 61_000, PER_MINUTE, 1, "late");
  assert.equal(refused.allowed, false);
  assert.equal(refused.retryAfterMs, 59_000 + 60_000 - 61_000, "when the oldest entry leaves");
  assert.equal(slidingWindowLog.decide(state, 119_000, PER_MINUTE, 1, "late").allowed, true);
});

test("one entry per admitted unit: stored bytes grow with the limit", () => {
  const sizes = [10, 100, 1_000].map((limitUnits) => {
    const limit: SlidingWindowLogLimit = { ...PER_MINUTE, limit: limitUnits };
    let state: SlidingWindowLogState | undefined;
    for (let i = 0; i < limitUnits; i++)
      state = slidingWindowLog.decide(state, 1_000 + i, limit, 1, `req-${i}`).state;
    assert.equal(state?.entries.length, limitUnits);
    return storedBytes(slidingWindowLog.toStored(state!, limit));
  });
  assert.ok(sizes[1]! > 9 * sizes[0]! && sizes[2]! > 9 * sizes[1]!, `bytes ${sizes.join(", ")}`);
});

test("weighted cost records cost entries; refund removes exactly the request's entries", () => {
  const limit: SlidingWindowLogLimit = { algorithm: "sliding-window-log", limit: 5, windowMs: 1_000 };
  const a = slidingWindowLog.decide(undefined, 0, limit, 3, "a");
  assert.deepEqual(
    a.state.entries.map((e) => e.member),
    ["a:0", "a:1", "a:2"],
  );
  const b = slidingWindowLog.decide(a.state, 10, limit, 2, "b");
  assert.equal(b.remaining, 0);
  const refused = slidingWindowLog.decide(b.state, 20, limit, 2, "c");
  assert.deepEqual(
    [refused.allowed, refused.retryAfterMs],
    [false, 1_000 - 20],
    "a:0 and a:1 must leave (t = 1000)",
  );
  const refunded = slidingWindowLog.refund(b.state, 20, limit, 3, "a");
  assert.deepEqual(
    refunded.entries.map((e) => e.member),
    ["b:0", "b:1"],
  );
  assert.equal(slidingWindowLog.decide(refunded, 20, limit, 3, "c").allowed, true);
});

test("a request id is required and may not be reused while its entries are live", () => {
  const limit: SlidingWindowLogLimit = { algorithm: "sliding-window-log", limit: 5, windowMs: 1_000 };
  assert.throws(() => slidingWindowLog.decide(undefined, 0, limit, 1), /requestId/);
  const a = slidingWindowLog.decide(undefined, 0, limit, 1, "same");
  assert.throws(
    () => slidingWindowLog.decide(a.state, 1, limit, 1, "same"),
    /requestId "same" is already in the log/,
  );
  assert.equal(
    slidingWindowLog.decide(a.state, 1_000, limit, 1, "same").allowed,
    true,
    "expired entries don't count",
  );
});

test("RL-05 entries stamped by a clock that later stepped back still count", () => {
  const limit: SlidingWindowLogLimit = { algorithm: "sliding-window-log", limit: 2, windowMs: 1_000 };
  let state = slidingWindowLog.decide(undefined, 50_000, limit, 2, "a").state;
  const back = slidingWindowLog.decide(state, 40_000, limit, 1, "b");
  assert.equal(back.allowed, false);
  assert.equal(back.retryAfterMs, 51_000 - 40_000);
  state = slidingWindowLog.decide(state, 51_000, limit, 1, "c").state;
  assert.equal(state.entries.length, 1);
});

test("property: any span (t − windowMs, t] holds ≤ limit admitted units (exact)", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(10, 1_000, 60_000),
      fc.array(fc.record({ stepMs: fc.nat({ max: 2_000 }), cost: fc.integer({ min: 1, max: 20 }) }), {
        maxLength: 150,
        size: "large",
      }),
      (limitUnits, windowMs, calls) => {
        const limit: SlidingWindowLogLimit = { algorithm: "sliding-window-log", limit: limitUnits, windowMs };
        let state: SlidingWindowLogState | undefined;
        let nowMs = 7_777;
        const admitted: { atMs: number; units: number }[] = [];
        calls.forEach((call, i) => {
          nowMs += call.stepMs;
          const cost = 1 + (call.cost % limitUnits);
          const d = slidingWindowLog.decide(state, nowMs, limit, cost, `r${i}`);
          const inSpan = admitted.filter((a) => a.atMs > nowMs - windowMs).reduce((s, a) => s + a.units, 0);
          // Exact: it admits if and only if the span has room.
          assert.equal(d.allowed, inSpan + cost <= limitUnits);
          if (d.allowed) {
            state = d.state;
            admitted.push({ atMs: nowMs, units: cost });
          }
        });
      },
    ),
    { seed: SEED, numRuns: 200 },
  );
});

import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import type { FixedWindowLimit } from "../src/domain/algorithm.ts";
import { type FixedWindowState, fixedWindow } from "../src/domain/fixed-window.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const PER_MINUTE: FixedWindowLimit = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 };

test("counts per clock-aligned window and refuses until the window ends", () => {
  let state: FixedWindowState | undefined;
  for (let i = 0; i < 100; i++) {
    const d = fixedWindow.decide(state, 30_000 + i, PER_MINUTE, 1);
    assert.equal(d.allowed, true);
    assert.equal(d.remaining, 99 - i);
    assert.equal(d.resetMs, 60_000 - (30_000 + i));
    state = d.state;
  }
  const refused = fixedWindow.decide(state, 45_000, PER_MINUTE, 1);
  assert.deepEqual([refused.allowed, refused.remaining, refused.retryAfterMs], [false, 0, 15_000]);
  assert.equal(refused.state, state, "a refusal writes nothing");
  const next = fixedWindow.decide(state, 60_000, PER_MINUTE, 1);
  assert.deepEqual(
    [next.allowed, next.remaining, next.state],
    [true, 99, { windowStartMs: 60_000, count: 1 }],
  );
});

test("the boundary burst: 100 at the end of one minute and 100 at the start of the next all pass (2 × limit in 2 s)", () => {
  let state: FixedWindowState | undefined;
  let admitted = 0;
  for (let i = 0; i < 200; i++) {
    const d = fixedWindow.decide(state, 59_000 + i * 10, PER_MINUTE, 1);
    if (d.allowed) {
      admitted++;
      state = d.state;
    }
  }
  assert.equal(admitted, 200);
});

test("RL-05 a clock stepping back into an earlier window does not reopen it", () => {
  let state: FixedWindowState | undefined;
  for (let i = 0; i < 100; i++) state = fixedWindow.decide(state, 120_500, PER_MINUTE, 1).state;
  const back = fixedWindow.decide(state, 110_000, PER_MINUTE, 1);
  assert.equal(back.allowed, false);
  assert.equal(back.retryAfterMs, 180_000 - 110_000, "until the stored window ends");
  assert.equal(fixedWindow.decide(state, 180_000, PER_MINUTE, 1).allowed, true);
});

test("weighted cost and refund", () => {
  const limit: FixedWindowLimit = { algorithm: "fixed-window", limit: 5, windowMs: 1_000 };
  const d = fixedWindow.decide(undefined, 0, limit, 4);
  assert.deepEqual([d.allowed, d.remaining], [true, 1]);
  assert.equal(fixedWindow.decide(d.state, 1, limit, 2).allowed, false);
  assert.deepEqual(fixedWindow.refund(d.state, 1, limit, 4), { windowStartMs: 0, count: 0 });
  assert.deepEqual(
    fixedWindow.refund(d.state, 1_000, limit, 4),
    { windowStartMs: 1_000, count: 0 },
    "window over",
  );
});

test("property: each aligned window admits ≤ limit; any windowMs span admits ≤ 2 × limit", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.constantFrom(10, 1_000, 60_000),
      fc.array(fc.record({ stepMs: fc.nat({ max: 2_000 }), cost: fc.integer({ min: 1, max: 20 }) }), {
        maxLength: 150,
        size: "large",
      }),
      (limitUnits, windowMs, calls) => {
        const limit: FixedWindowLimit = { algorithm: "fixed-window", limit: limitUnits, windowMs };
        let state: FixedWindowState | undefined;
        let nowMs = 7_777;
        const admitted: { atMs: number; units: number }[] = [];
        for (const call of calls) {
          nowMs += call.stepMs;
          const cost = 1 + (call.cost % limitUnits);
          const d = fixedWindow.decide(state, nowMs, limit, cost);
          if (!d.allowed) continue;
          state = d.state;
          admitted.push({ atMs: nowMs, units: cost });
          const sum = (from: number) =>
            admitted.filter((a) => a.atMs >= from).reduce((s, a) => s + a.units, 0);
          assert.ok(sum(nowMs - (nowMs % windowMs)) <= limitUnits);
          assert.ok(sum(nowMs - windowMs + 1) <= 2 * limitUnits);
        }
      },
    ),
    { seed: SEED, numRuns: 200 },
  );
});

test("invalid params are rejected naming the field", () => {
  assert.throws(() => fixedWindow.decide(undefined, 0, { ...PER_MINUTE, limit: 0 }, 1), /limit\.limit/);
  assert.throws(
    () => fixedWindow.decide(undefined, 0, { ...PER_MINUTE, windowMs: 1.5 }, 1),
    /limit\.windowMs/,
  );
  assert.throws(() => fixedWindow.decide(undefined, 0, PER_MINUTE, 101), /cost/);
});

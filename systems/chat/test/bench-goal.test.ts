/**
 * The bench's throughput goal is judged only when the peer was saturated: a saturation run in
 * which socket.io sent most of the offered rate measured the offered rate, not socket.io (on a
 * quiet machine the old default of 500 msgs/s capped both sides at ~420 and printed "met").
 * Each side's maximum is the median of its saturation runs, not the best nor the last.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { RunResult } from "../bench/load-child.ts";
import { medianRun, offeredRateCapped } from "../bench/main.ts";

test("a side that sent 80% or more of the offered rate was not saturated; below it, it was", () => {
  assert.equal(offeredRateCapped({ maxMsgsPerS: 416 }, 500), true);
  assert.equal(offeredRateCapped({ maxMsgsPerS: 755 }, 1_000), false);
  assert.equal(offeredRateCapped({ maxMsgsPerS: 800 }, 1_000), true);
});

test("a side's maximum is its median saturation run, whole (the lower middle one of an even count)", () => {
  const run = (deliveredPerS: number, errors: number) => ({ deliveredPerS, errors }) as RunResult;
  const runs = [run(62_294, 828), run(27_149, 11_263), run(48_925, 9_905)];
  assert.deepEqual(medianRun(runs), run(48_925, 9_905));
  assert.deepEqual(medianRun([run(3, 0), run(1, 0)]), run(1, 0));
  assert.deepEqual(medianRun([run(5, 1)]), run(5, 1));
  assert.throws(() => medianRun([]), /no runs/);
});

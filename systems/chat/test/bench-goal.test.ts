/**
 * The bench's throughput goal is judged only when the peer was saturated: a saturation run in
 * which socket.io sent most of the offered rate measured the offered rate, not socket.io (on a
 * quiet machine the old default of 500 msgs/s capped both sides at ~420 and printed "met").
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { offeredRateCapped } from "../bench/main.ts";

test("a side that sent 80% or more of the offered rate was not saturated; below it, it was", () => {
  assert.equal(offeredRateCapped({ maxMsgsPerS: 416 }, 500), true);
  assert.equal(offeredRateCapped({ maxMsgsPerS: 755 }, 1_000), false);
  assert.equal(offeredRateCapped({ maxMsgsPerS: 800 }, 1_000), true);
});

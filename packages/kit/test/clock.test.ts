import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock, systemClock } from "../src/clock.ts";

test("manual clock moves only when advanced", () => {
  const clock = new ManualClock(1_000);
  assert.equal(clock.nowMs(), 1_000);
  clock.advance(250);
  assert.equal(clock.nowMs(), 1_250);
  assert.equal(clock.monotonicMs(), 250);
  assert.throws(() => clock.advance(-1), RangeError);
});

test("wall time may jump back while monotonic time does not", () => {
  const clock = new ManualClock(5_000);
  clock.advance(10);
  clock.setWallMs(1_000);
  assert.equal(clock.nowMs(), 1_000);
  assert.equal(clock.monotonicMs(), 10);
});

test("system clock monotonic time never decreases", () => {
  let last = systemClock.monotonicMs();
  for (let i = 0; i < 1_000; i++) {
    const now = systemClock.monotonicMs();
    assert.ok(now >= last);
    last = now;
  }
});

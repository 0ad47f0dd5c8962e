import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { type Clock, ManualClock } from "../src/clock.ts";
import { kitErrors } from "../src/kit-errors.ts";
import {
  DEFAULT_SNOWFLAKE_EPOCH_MS,
  decodeSnowflake,
  MAX_SEQUENCE,
  MAX_WORKER_ID,
  SnowflakeGenerator,
  snowflakeFloor,
} from "../src/snowflake.ts";

const T0 = DEFAULT_SNOWFLAKE_EPOCH_MS + 1_000_000;

test("41 bits of ms since the epoch, 10 of worker id, 12 of sequence; decode gives them back", () => {
  const clock = new ManualClock(T0);
  const ids = new SnowflakeGenerator({ clock, workerId: 5 });
  const a = ids.next();
  const b = ids.next();
  assert.equal(a, (1_000_000n << 22n) | (5n << 12n));
  assert.equal(b, a + 1n, "the same ms: the next sequence");
  assert.deepEqual(decodeSnowflake(b), { timestampMs: T0, workerId: 5, sequence: 1 });
  clock.advance(3);
  assert.deepEqual(decodeSnowflake(ids.next()), { timestampMs: T0 + 3, workerId: 5, sequence: 0 });
  assert.ok(snowflakeFloor(T0 + 3) <= ids.next() && snowflakeFloor(T0 + 4) > a);
});

test("a custom epoch: ms 0 is the epoch, and decode needs the same epoch", () => {
  const clock = new ManualClock(10_000);
  const ids = new SnowflakeGenerator({ clock, workerId: MAX_WORKER_ID, epochMs: 9_000 });
  const id = ids.next();
  assert.deepEqual(decodeSnowflake(id, 9_000), { timestampMs: 10_000, workerId: MAX_WORKER_ID, sequence: 0 });
});

test("a clock that goes back is refused with SNOWFLAKE_CLOCK_BACKWARDS until it passes the last id's ms", () => {
  const clock = new ManualClock(T0);
  const ids = new SnowflakeGenerator({ clock, workerId: 1 });
  const last = ids.next();
  clock.setWallMs(T0 - 40);
  assert.throws(
    () => ids.next(),
    (e: unknown) =>
      kitErrors.is(e, "SNOWFLAKE_CLOCK_BACKWARDS") && e.fields.behindMs === 40 && e.fields.lastMs === T0,
  );
  clock.setWallMs(T0);
  const next = ids.next();
  assert.ok(next > last, "back at the last ms: the sequence goes on");
  assert.equal(decodeSnowflake(next).sequence, 1);
});

test("4,096 ids in one ms: the next waits for the next ms by reading the clock again", () => {
  let reads = 0;
  let nowMs = T0;
  // A clock that moves on after 10 more reads once the sequence is spent.
  const clock: Clock = {
    nowMs: () => {
      reads += 1;
      return nowMs;
    },
    monotonicMs: () => 0,
  };
  const ids = new SnowflakeGenerator({ clock, workerId: 2 });
  const issued: bigint[] = [];
  for (let i = 0; i <= MAX_SEQUENCE; i++) issued.push(ids.next());
  assert.equal(decodeSnowflake(issued.at(-1)!).sequence, MAX_SEQUENCE);
  const spentAt = reads;
  const realNow = clock.nowMs;
  clock.nowMs = () => {
    if (reads - spentAt >= 10) nowMs = T0 + 1;
    return realNow();
  };
  const id = ids.next();
  assert.deepEqual(decodeSnowflake(id), { timestampMs: T0 + 1, workerId: 2, sequence: 0 });
  assert.ok(id > issued.at(-1)!);
});

test("a clock that never moves on past a spent ms is reported stalled, not spun on forever", () => {
  const clock = new ManualClock(T0);
  const ids = new SnowflakeGenerator({ clock, workerId: 3 });
  for (let i = 0; i <= MAX_SEQUENCE; i++) ids.next();
  assert.throws(
    () => ids.next(),
    (e: unknown) => kitErrors.is(e, "SNOWFLAKE_CLOCK_STALLED"),
  );
});

test("bad worker ids and a clock before the epoch are refused", () => {
  const clock = new ManualClock(T0);
  for (const workerId of [-1, MAX_WORKER_ID + 1, 1.5]) {
    assert.throws(() => new SnowflakeGenerator({ clock, workerId }), RangeError);
  }
  const early = new SnowflakeGenerator({
    clock: new ManualClock(DEFAULT_SNOWFLAKE_EPOCH_MS - 1),
    workerId: 0,
  });
  assert.throws(() => early.next(), RangeError);
  assert.throws(() => decodeSnowflake(-1n), RangeError);
});

test("property: ids of one generator strictly increase, and two workers never collide", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 300 }), (steps) => {
      const clock = new ManualClock(T0);
      const a = new SnowflakeGenerator({ clock, workerId: 1 });
      const b = new SnowflakeGenerator({ clock, workerId: 2 });
      const seen = new Set<bigint>();
      let last = -1n;
      for (const step of steps) {
        clock.advance(step);
        const id = a.next();
        assert.ok(id > last);
        last = id;
        seen.add(id);
        seen.add(b.next());
      }
      assert.equal(seen.size, steps.length * 2);
    }),
  );
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { LocalLimiter } from "../src/domain/local-limiter.ts";

const LIMIT = { capacity: 100, ratePerS: 10 };

test("RL-11 each instance holds quota × 1/instances: 4 instances × 25 = the quota of 100 in a burst", () => {
  const clock = new ManualClock(0);
  const instances = Array.from({ length: 4 }, () => new LocalLimiter({ clock, maxKeys: 10, instances: 4 }));
  let admitted = 0;
  for (const local of instances) {
    for (let i = 0; i < 40; i++) if (local.take("user:42", LIMIT).allowed) admitted++;
  }
  assert.equal(admitted, 100);
  assert.equal(instances[0]!.fraction, 0.25);
});

test("RL-11 the local bucket refuses without spending, says when to retry, and refills lazily from the monotonic clock", () => {
  const clock = new ManualClock(1_000_000);
  const local = new LocalLimiter({ clock, maxKeys: 10, fraction: 0.5 });
  const limit = { capacity: 10, ratePerS: 2 }; // locally: 5 tokens, 1 token/s
  const remaining = Array.from({ length: 5 }, () => local.take("k", limit).remaining);
  assert.deepEqual(remaining, [4, 3, 2, 1, 0]);
  const refused = local.take("k", limit);
  assert.deepEqual(
    {
      allowed: refused.allowed,
      retryAfterMs: refused.retryAfterMs,
      resetMs: refused.resetMs,
      capacity: refused.capacity,
    },
    { allowed: false, retryAfterMs: 1_000, resetMs: 5_000, capacity: 5 },
  );
  clock.advance(999);
  assert.equal(local.take("k", limit).allowed, false);
  assert.equal(local.take("k", limit).retryAfterMs, 1);
  clock.advance(1);
  assert.equal(local.take("k", limit).allowed, true);
});

test("RL-05 a wall clock stepping back mints no local tokens (the limiter reads the monotonic clock)", () => {
  const clock = new ManualClock(50_000);
  const local = new LocalLimiter({ clock, maxKeys: 10, fraction: 1 });
  const limit = { capacity: 2, ratePerS: 1 };
  local.take("k", limit);
  local.take("k", limit);
  clock.setWallMs(0);
  clock.setWallMs(10_000_000);
  assert.equal(local.take("k", limit).allowed, false);
});

test("at most maxKeys buckets are held, the least recently used evicted first and counted", () => {
  const clock = new ManualClock(0);
  const local = new LocalLimiter({ clock, maxKeys: 2, fraction: 1 });
  const limit = { capacity: 1, ratePerS: 0.001 };
  local.take("a", limit);
  local.take("b", limit);
  local.take("a", limit); // refused, and makes "a" the most recently used
  local.take("c", limit); // evicts "b"
  assert.equal(local.size, 2);
  assert.equal(local.evictions, 1);
  assert.equal(local.take("a", limit).allowed, false, "a kept its (empty) state");
  assert.equal(local.take("b", limit).allowed, true, "b was evicted and comes back full");
});

test("a tiny quota still gives each instance one token; a cost above the local capacity is clamped", () => {
  const clock = new ManualClock(0);
  const local = new LocalLimiter({ clock, maxKeys: 10, instances: 8 });
  const d = local.take("k", { capacity: 3, ratePerS: 1 });
  assert.equal(d.capacity, 1);
  assert.equal(d.allowed, true);
  const bulk = new LocalLimiter({ clock, maxKeys: 10, fraction: 0.1 });
  assert.equal(
    bulk.take("k", { capacity: 100, ratePerS: 1 }, 50).allowed,
    true,
    "cost 50 clamped to the local 10",
  );
  assert.equal(bulk.take("k", { capacity: 100, ratePerS: 1 }, 1).allowed, false);
});

test("refund gives back what a request spent, never above capacity", () => {
  const clock = new ManualClock(0);
  const local = new LocalLimiter({ clock, maxKeys: 10, fraction: 1 });
  const limit = { capacity: 3, ratePerS: 0.001 };
  local.take("k", limit, 2);
  local.refund("k", limit, 2);
  local.refund("k", limit, 2);
  local.refund("missing", limit, 1);
  assert.equal(local.take("k", limit).remaining, 2);
});

test("bad options and limits are refused", () => {
  const clock = new ManualClock(0);
  assert.throws(() => new LocalLimiter({ clock, maxKeys: 0, fraction: 1 }), RangeError);
  assert.throws(() => new LocalLimiter({ clock, maxKeys: 1 }), /fraction/);
  assert.throws(() => new LocalLimiter({ clock, maxKeys: 1, fraction: 1.5 }), RangeError);
  const local = new LocalLimiter({ clock, maxKeys: 1, fraction: 1 });
  assert.throws(() => local.take("k", { capacity: 0, ratePerS: 1 }), RangeError);
  assert.throws(() => local.take("k", { capacity: 1, ratePerS: 0 }), RangeError);
});

test("RL-11 mirror: what Redis admitted through this instance leaves its share, and the share never holds more than its part of what Redis said is left", () => {
  const clock = new ManualClock(0);
  const local = new LocalLimiter({ clock, maxKeys: 10, instances: 3 });
  const limit = { capacity: 30, ratePerS: 0.001 };
  // Share 10; Redis admitted 4 through this instance, then said 21 remain (21 / 3 = 7 ≥ 6).
  for (let i = 0; i < 4; i++) local.mirror("k", limit, 1);
  local.mirror("k", limit, 0, 21);
  const left = [];
  for (let i = 0; i < 8; i++) left.push(local.take("k", limit).allowed);
  assert.deepEqual(left, [true, true, true, true, true, true, false, false], "6 left of the share of 10");
  // Redis said only 3 remain: this instance keeps at most 1 of them, whatever it spent.
  local.mirror("fresh", limit, 0, 3);
  assert.deepEqual([local.take("fresh", limit).allowed, local.take("fresh", limit).allowed], [true, false]);
  // A refusal from Redis (0 left) empties the share; spending never goes below 0.
  local.mirror("gone", limit, 50, 0);
  assert.equal(local.take("gone", limit).allowed, false);
});

test("RL-11 setInstances: the live count divides the share, a fixed fraction stays", () => {
  const clock = new ManualClock(0);
  const limit = { capacity: 12, ratePerS: 0.001 };
  const local = new LocalLimiter({ clock, maxKeys: 10, instances: 1 });
  local.setInstances(4);
  assert.equal(local.fraction, 0.25);
  assert.equal(local.take("k", limit).capacity, 3);
  const fixed = new LocalLimiter({ clock, maxKeys: 10, fraction: 0.5 });
  fixed.setInstances(4);
  assert.equal(fixed.fraction, 0.5);
  assert.throws(() => local.setInstances(0), RangeError);
});

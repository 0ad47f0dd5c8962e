import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { TokenBucket } from "../src/token-bucket.ts";

test("a full bucket allows `capacity` back to back, then says when the next token comes", () => {
  const bucket = new TokenBucket({ capacity: 2, ratePerS: 10, nowMs: 0 });
  assert.equal(bucket.take(0), 0);
  assert.equal(bucket.tryTake(0), true);
  assert.equal(bucket.take(0), 100);
  assert.equal(bucket.readyAtMs(0), 100);
  assert.equal(bucket.tryTake(99), false);
  assert.equal(bucket.take(100), 0);
  assert.equal(bucket.isFull(100), false);
  assert.equal(bucket.isFull(300), true);
});

test("a clock stepping back removes no tokens and adds none", () => {
  const bucket = new TokenBucket({ capacity: 1, ratePerS: 1, nowMs: 1_000 });
  assert.equal(bucket.tryTake(1_000), true);
  assert.equal(bucket.tryTake(500), false);
  assert.equal(bucket.readyAtMs(500), 2_000);
  assert.equal(bucket.tryTake(2_000), true);
});

test("over any window, takes never exceed capacity + rate × elapsed", () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 20 }),
      fc.integer({ min: 1, max: 1_000 }),
      fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 300 }),
      (capacity, ratePerS, steps) => {
        const bucket = new TokenBucket({ capacity, ratePerS, nowMs: 0 });
        let nowMs = 0;
        let taken = 0;
        for (const step of steps) {
          nowMs += step;
          if (bucket.tryTake(nowMs)) taken += 1;
          assert.ok(taken <= capacity + (ratePerS * nowMs) / 1_000 + 1e-9);
          assert.ok(bucket.available(nowMs) >= 0 && bucket.available(nowMs) <= capacity);
        }
      },
    ),
  );
});

test("bad options are refused by name", () => {
  assert.throws(() => new TokenBucket({ capacity: 0, ratePerS: 1, nowMs: 0 }), /capacity/);
  assert.throws(() => new TokenBucket({ capacity: 1, ratePerS: 0, nowMs: 0 }), /ratePerS/);
  assert.throws(
    () => new TokenBucket({ capacity: Number.POSITIVE_INFINITY, ratePerS: 1, nowMs: 0 }),
    /capacity/,
  );
});

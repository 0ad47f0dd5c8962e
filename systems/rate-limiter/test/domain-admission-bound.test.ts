import assert from "node:assert/strict";
import { test } from "node:test";
import { admissionBound } from "../src/domain/admission-bound.ts";

test("the bound is capacity + refill × elapsed for the buckets, and limit per window touched for the windows", () => {
  assert.equal(admissionBound({ algorithm: "token-bucket", capacity: 100, ratePerS: 10 }, 0, 2_000), 120);
  assert.equal(admissionBound({ algorithm: "gcra", burst: 5, ratePerS: 1 }, 0, 1_000), 6);
  assert.equal(admissionBound({ algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 2 }, 0, 500), 11);
  const fixed = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 } as const;
  assert.equal(admissionBound(fixed, 10_000, 20_000), 100, "inside one window");
  assert.equal(admissionBound(fixed, 59_000, 61_000), 200, "across a boundary: RL-07's 2×");
  const counter = { algorithm: "sliding-window-counter", limit: 100, windowMs: 60_000 } as const;
  assert.equal(admissionBound(counter, 59_000, 61_000), 200);
  const log = { algorithm: "sliding-window-log", limit: 100, windowMs: 60_000 } as const;
  assert.equal(admissionBound(log, 59_000, 61_000), 100, "exact over any span up to a window");
  assert.equal(admissionBound(log, 0, 90_000), 200);
  assert.throws(() => admissionBound(log, 10, 5), RangeError);
});

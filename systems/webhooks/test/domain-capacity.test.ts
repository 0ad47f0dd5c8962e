/** WH-05, WH-06, WH-19: the text's arithmetic, reproduced exactly as the claims state it. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { deliveryLoad, drain, kib, payloadBytesPerS, workersFor } from "../src/domain/capacity.ts";
import { deliveryErrors } from "../src/errors.ts";

test("WH-05 200k events/day × 3 subscriptions = 600k tasks/day ≈ 6.94/s; peak 50× ≈ 347.2/s", () => {
  const load = deliveryLoad({ eventsPerDay: 200_000, subscriptionsPerEvent: 3, peakFactor: 50 });
  assert.equal(load.tasksPerDay, 600_000);
  assert.equal(load.tasksPerS.toFixed(2), "6.94");
  assert.equal(load.peakTasksPerS.toFixed(1), "347.2");
});

test("WH-05 at 60 attempts/s per worker six workers cover the peak and a seventh gives N+1", () => {
  const { peakTasksPerS } = deliveryLoad({ eventsPerDay: 200_000, subscriptionsPerEvent: 3, peakFactor: 50 });
  assert.deepEqual(workersFor({ attemptsPerS: peakTasksPerS, attemptsPerWorkerPerS: 60 }), {
    cover: 6,
    withSpare: 7,
  });
  // Six is an ideal split: 6 × 60 = 360 leaves 12.8/s of headroom, and retries are not in it.
  assert.ok(6 * 60 - peakTasksPerS < 13);
  assert.throws(
    () => workersFor({ attemptsPerS: 1, attemptsPerWorkerPerS: 0 }),
    (e) => deliveryErrors.is(e, "WEBHOOK_CAPACITY_INVALID"),
  );
});

test("WH-06 a 2 KiB body at 350 attempts/s is 700 KiB/s of payload", () => {
  const bytesPerS = payloadBytesPerS({ bodyBytes: 2 * 1024, attemptsPerS: 350 });
  assert.equal(bytesPerS, 716_800);
  assert.equal(kib(bytesPerS), 700);
});

test("WH-19 350/s for 900 s leaves 315,000 queued; at 500/s the 150/s margin drains it in 2,100 s (35 min)", () => {
  const result = drain({ arrivalPerS: 350, outageS: 900, processingPerS: 500 });
  assert.deepEqual(result, { backlog: 315_000, drainS: 2_100 });
  assert.equal(result.drainS / 60, 35);
});

test("WH-19 (0, 600, 500) → (0, 0); at 400/s processing the drain takes 6,300 s", () => {
  assert.deepEqual(drain({ arrivalPerS: 0, outageS: 600, processingPerS: 500 }), { backlog: 0, drainS: 0 });
  assert.deepEqual(drain({ arrivalPerS: 350, outageS: 900, processingPerS: 400 }), {
    backlog: 315_000,
    drainS: 6_300,
  });
});

test("WH-19 processing at or below arrival is an error, and so are negative inputs", () => {
  const capacityInvalid = (e: unknown) => deliveryErrors.is(e, "WEBHOOK_CAPACITY_INVALID");
  assert.throws(() => drain({ arrivalPerS: 350, outageS: 900, processingPerS: 340 }), capacityInvalid);
  assert.throws(() => drain({ arrivalPerS: 350, outageS: 900, processingPerS: 350 }), capacityInvalid);
  assert.throws(() => drain({ arrivalPerS: -1, outageS: 900, processingPerS: 500 }), capacityInvalid);
  assert.throws(() => drain({ arrivalPerS: 1, outageS: Number.NaN, processingPerS: 500 }), capacityInvalid);
});

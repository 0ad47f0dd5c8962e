import assert from "node:assert/strict";
import { test } from "node:test";
import { setImmediate as nextTurn } from "node:timers/promises";
import { type AdmissionFate, AdmissionGate } from "../src/admission-gate.ts";
import { ManualClock, systemClock } from "../src/clock.ts";

test("slots are taken at once up to maxInFlight; then callers queue in order and get freed slots", async () => {
  const gate = new AdmissionGate({
    maxInFlight: 2,
    maxQueued: 2,
    maxQueueWaitMs: 60_000,
    clock: new ManualClock(0),
  });
  assert.equal(gate.enter(), "admitted");
  assert.equal(gate.enter(), "admitted");
  const fates: string[] = [];
  const third = Promise.resolve(gate.enter()).then((f) => fates.push(`3:${f}`));
  const fourth = Promise.resolve(gate.enter()).then((f) => fates.push(`4:${f}`));
  assert.equal(gate.inFlight, 2);
  assert.equal(gate.queued, 2);
  assert.equal(gate.enter(), "queue-full", "the queue holds maxQueued callers, no more");
  gate.leave();
  await third;
  assert.deepEqual(fates, ["3:admitted"]);
  gate.leave();
  await fourth;
  assert.deepEqual(fates, ["3:admitted", "4:admitted"]);
  assert.equal(gate.inFlight, 2);
  assert.deepEqual(gate.shed, { "queue-full": 1, "queue-wait": 0 });
  gate.leave();
  gate.leave();
  assert.throws(() => gate.leave(), /without a slot held/);
});

test("a waiter past maxQueueWaitMs with no slot freed is shed (queue-wait), within the wait plus one loop turn", async () => {
  const gate = new AdmissionGate({ maxInFlight: 1, maxQueued: 10, maxQueueWaitMs: 30, clock: systemClock });
  assert.equal(gate.enter(), "admitted");
  const started = performance.now();
  const fate = await gate.enter();
  const waitedMs = performance.now() - started;
  assert.equal(fate, "queue-wait");
  assert.ok(waitedMs >= 29, `shed after its wait, not before: ${waitedMs.toFixed(1)} ms`);
  assert.deepEqual(gate.shed, { "queue-full": 0, "queue-wait": 1 });
  assert.equal(gate.queued, 0);
  gate.leave();
});

test("a slot freed in the same loop turn as the deadline goes to the waiter: our own lag sheds no one", async () => {
  const gate = new AdmissionGate({ maxInFlight: 1, maxQueued: 10, maxQueueWaitMs: 10, clock: systemClock });
  assert.equal(gate.enter(), "admitted");
  const fate = Promise.resolve(gate.enter());
  // The loop is blocked past the deadline; the slot is freed by I/O of the next poll phase
  // (setImmediate stands for it: it runs before the shed check, which waits one more turn).
  const until = performance.now() + 40;
  while (performance.now() < until) {
    // a starved event loop
  }
  setImmediate(() => gate.leave());
  assert.equal(await fate, "admitted");
  assert.deepEqual(gate.shed, { "queue-full": 0, "queue-wait": 0 });
  gate.leave();
});

test("with maxQueued 0 a caller finding every slot taken is shed at once; bad bounds are refused", async () => {
  const gate = new AdmissionGate({ maxInFlight: 1, maxQueued: 0, maxQueueWaitMs: 5, clock: systemClock });
  assert.equal(gate.enter(), "admitted");
  const fates: AdmissionFate[] = [];
  for (let i = 0; i < 3; i++) fates.push(await gate.enter());
  assert.deepEqual(fates, ["queue-full", "queue-full", "queue-full"]);
  gate.leave();
  await nextTurn();
  assert.equal(gate.enter(), "admitted");
  gate.leave();
  const clock = systemClock;
  assert.throws(
    () => new AdmissionGate({ maxInFlight: 0, maxQueued: 1, maxQueueWaitMs: 1, clock }),
    /maxInFlight/,
  );
  assert.throws(
    () => new AdmissionGate({ maxInFlight: 1, maxQueued: -1, maxQueueWaitMs: 1, clock }),
    /maxQueued/,
  );
  assert.throws(
    () => new AdmissionGate({ maxInFlight: 1, maxQueued: 1, maxQueueWaitMs: 0, clock }),
    /maxQueueWaitMs/,
  );
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { LeaseRenewal, whileRenewing } from "../src/lease-renewal.ts";

test("renews while the work runs and not after it ends", async () => {
  let calls = 0;
  const renew = async () => {
    calls++;
    return true;
  };
  const result = await whileRenewing({ everyMs: 5, renew }, async (signal) => {
    while (calls < 3) await sleep(5);
    assert.equal(signal.aborted, false);
    return "done";
  });
  assert.equal(result, "done");
  const atEnd = calls;
  await sleep(40);
  assert.equal(calls, atEnd, "no renewal after the work ended");
});

test("a renewal that answers 'lost' aborts the signal, calls onLost once and stops renewing", async () => {
  let calls = 0;
  let lostCalls = 0;
  const renewal = new LeaseRenewal({
    everyMs: 5,
    renew: async () => ++calls < 2,
    onLost: () => lostCalls++,
  });
  await new Promise<void>((resolve) => renewal.signal.addEventListener("abort", () => resolve()));
  assert.equal(renewal.lost, true);
  assert.equal(renewal.renewals, 1);
  await sleep(40);
  assert.equal(calls, 2, "no renewal once lost");
  assert.equal(lostCalls, 1);
  await renewal.stop();
});

test("a renewal that throws is reported and tried again: only an answer ends the lease", async () => {
  let calls = 0;
  const errors: unknown[] = [];
  const renewal = new LeaseRenewal({
    everyMs: 5,
    renew: async () => {
      calls++;
      if (calls <= 2) throw new Error("database did not answer");
      return true;
    },
    onError: (error) => errors.push(error),
  });
  while (renewal.renewals < 2) await sleep(5);
  await renewal.stop();
  assert.equal(errors.length, 2);
  assert.equal(renewal.lost, false);
  assert.throws(() => new LeaseRenewal({ everyMs: 0, renew: async () => true }), RangeError);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { GroupCommitLanes } from "../src/group-commit-lanes.ts";

test("GroupCommitLanes writes on several lanes at once, each item getting its own result; stats sum the lanes", async () => {
  let inFlight = 0;
  let most = 0;
  const lanes = new GroupCommitLanes(
    async (batch: number[]) => {
      inFlight += 1;
      most = Math.max(most, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight -= 1;
      return batch.map((n) => n * 2);
    },
    { lanes: 3, maxBatch: 4, maxPending: 100 },
  );
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) => lanes.submit(i)));
  assert.deepEqual(
    results,
    Array.from({ length: 30 }, (_, i) => i * 2),
  );
  assert.equal(most, 3, "three writes overlapped");
  assert.equal(lanes.stats.items, 30);
  assert.ok(lanes.stats.batches >= 30 / 4);
  await lanes.drain();
  assert.equal(lanes.pending, 0);
  assert.throws(
    () => new GroupCommitLanes(async () => [], { lanes: 0, maxBatch: 1, maxPending: 1 }),
    RangeError,
  );
});

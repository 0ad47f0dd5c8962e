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

test("GroupCommitLanes: items submitted together fill ONE batch even with two lanes (a lane that is not writing, the one with the most waiting)", async () => {
  const batches: number[][] = [];
  const lanes = new GroupCommitLanes(
    async (batch: number[]) => {
      batches.push(batch);
      return batch;
    },
    { lanes: 2, maxBatch: 100, maxPending: 100, maxWaitMs: 20 },
  );
  await Promise.all(Array.from({ length: 12 }, (_, i) => lanes.submit(i)));
  assert.deepEqual(batches, [Array.from({ length: 12 }, (_, i) => i)], "one batch of 12, in arrival order");
  assert.deepEqual(lanes.stats, { batches: 1, items: 12, refused: 0 });
});

test("GroupCommitLanes: a lane that is writing is passed over for an idle one; with every lane writing, an item joins the one with the fewest waiting", async () => {
  const releases: (() => void)[] = [];
  const batches: number[][] = [];
  const lanes = new GroupCommitLanes(
    async (batch: number[]) => {
      batches.push(batch);
      await new Promise<void>((resolve) => releases.push(resolve));
      return batch;
    },
    { lanes: 2, maxBatch: 100, maxPending: 100 },
  );
  const tick = () => new Promise((resolve) => setImmediate(resolve));
  const results = [0, 1, 2, 3, 4, 5, 6, 7].map((n) => lanes.submit(n));
  // 0 starts lane 1's write at once; lane 1 writing, so 1 goes to idle lane 2; then both write
  // and 2..7 alternate by fewest waiting.
  assert.deepEqual(batches, [[0], [1]]);
  assert.equal(lanes.pending, 6);
  releases.shift()!();
  await tick();
  assert.deepEqual(batches[2], [2, 4, 6], "lane 1's waiting items went as one batch");
  // Both lanes writing again; lane 1 has none waiting, lane 2 three: 8 joins lane 1.
  results.push(lanes.submit(8));
  releases.shift()!();
  await tick();
  assert.deepEqual(batches[3], [3, 5, 7]);
  releases.shift()!();
  await tick();
  assert.deepEqual(batches[4], [8]);
  while (releases.length > 0) {
    releases.shift()!();
    await tick();
  }
  assert.deepEqual(await Promise.all(results), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  await lanes.drain();
});

import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { GroupCommit } from "../src/group-commit.ts";
import { kitErrors } from "../src/kit-errors.ts";

// Moved from webhooks' worker-units.test.ts with its batcher (WH-10's group commit).
test("the first item goes alone, items arriving meanwhile go together; each caller gets its own answer", async () => {
  const batches: number[][] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const commit = new GroupCommit<number, number>(
    async (batch) => {
      batches.push(batch);
      if (batches.length === 1) await gate;
      return batch.map((n) => n * 10);
    },
    { maxBatch: 3, maxPending: 10 },
  );
  const answers = [1, 2, 3, 4, 5].map((n) => commit.submit(n));
  assert.equal(commit.pending, 4, "the first item is already in a write");
  release();
  assert.deepEqual(await Promise.all(answers), [10, 20, 30, 40, 50]);
  assert.deepEqual(batches, [[1], [2, 3, 4], [5]]);
  assert.deepEqual(commit.stats, { batches: 3, items: 5, refused: 0 });
});

test("past maxPending waiting items a submit is refused with GROUP_COMMIT_QUEUE_FULL; a failed batch fails its callers only", async () => {
  let fail: (error: Error) => void = () => {};
  const commit = new GroupCommit<number, number>(
    () =>
      new Promise<number[]>((_, reject) => {
        fail = reject;
      }),
    { maxBatch: 5, maxPending: 1 },
  );
  const inFlight = commit.submit(1);
  const waiting = commit.submit(2);
  await assert.rejects(
    commit.submit(3),
    (e: unknown) =>
      kitErrors.is(e, "GROUP_COMMIT_QUEUE_FULL") &&
      e.fields.limit === 1 &&
      e.status === 503 &&
      /more than 1 writes pending/.test(e.message),
  );
  fail(new Error("db down"));
  await assert.rejects(inFlight, /db down/);
  fail(new Error("still down"));
  await assert.rejects(waiting, /still down/);
  await commit.drain();
  assert.equal(commit.stats.refused, 1);
});

test("a write that returns the wrong number of results fails its batch as a bug", async () => {
  const commit = new GroupCommit<number, number>(async () => [1, 2, 3], { maxBatch: 5, maxPending: 5 });
  const both = [commit.submit(1), commit.submit(2)];
  await assert.rejects(both[0]!, /one result per item/);
  await assert.rejects(
    both[1]!,
    /one result per item/,
    "the second went alone in the next batch, and failed too",
  );
});

/**
 * A GroupCommit that echoes its items, records its batches, and whose waits for company end only
 * when the test calls one of `sleeps` (or the rule under test ends them).
 */
function waitingCommit(options: { maxBatch: number; fillTo?: "full" | "last-batch" }) {
  const batches: number[][] = [];
  const sleeps: Array<() => void> = [];
  const commit = new GroupCommit<number, number>(
    async (batch) => {
      batches.push(batch);
      return batch;
    },
    {
      ...options,
      maxPending: 10,
      maxWaitMs: 5,
      sleep: () => new Promise<void>((resolve) => sleeps.push(resolve)),
    },
  );
  return { commit, batches, sleeps };
}

test("maxWaitMs: a batch from idle waits for company, and goes at once when it fills", async () => {
  const { commit, batches, sleeps } = waitingCommit({ maxBatch: 3 });
  const a = commit.submit(1);
  await Promise.resolve();
  assert.deepEqual(batches, [], "waiting for company");
  const b = commit.submit(2);
  sleeps[0]!(); // the wait ends
  assert.deepEqual(await Promise.all([a, b]), [1, 2]);
  assert.deepEqual(batches, [[1, 2]]);
  const filled = [3, 4, 5].map((n) => commit.submit(n)); // the third fills the batch: no wait
  assert.deepEqual(await Promise.all(filled), [3, 4, 5]);
  assert.deepEqual(batches, [
    [1, 2],
    [3, 4, 5],
  ]);
  await commit.drain();
});

test("hurry and drain cut a wait for company short: the waiting items go at once", async () => {
  const batches: number[][] = [];
  const commit = new GroupCommit<number, number>(
    async (batch) => {
      batches.push(batch);
      return batch;
    },
    // A sleep that never ends: only hurry (or drain) can end the wait.
    { maxBatch: 10, maxPending: 10, maxWaitMs: 5, sleep: () => new Promise<void>(() => {}) },
  );
  const first = [1, 2].map((n) => commit.submit(n));
  await Promise.resolve();
  assert.deepEqual(batches, [], "waiting for company");
  commit.hurry();
  assert.deepEqual(await Promise.all(first), [1, 2]);
  assert.deepEqual(batches, [[1, 2]]);
  const second = commit.submit(3);
  await Promise.resolve();
  assert.deepEqual(batches, [[1, 2]], "a new idle moment waits again");
  await commit.drain();
  assert.equal(await second, 3);
  assert.deepEqual(batches, [[1, 2], [3]]);
  commit.hurry(); // nothing waiting: nothing happens
  assert.deepEqual(batches, [[1, 2], [3]]);
});

test("fillTo last-batch: a wait for company ends once as many items wait as the last batch had; a lone caller goes at once", async () => {
  // Only the test ends a sleep: every other end of a wait is the rule's.
  const { commit, batches, sleeps } = waitingCommit({ maxBatch: 10, fillTo: "last-batch" });
  const first = [1, 2, 3].map((n) => commit.submit(n));
  await Promise.resolve();
  assert.deepEqual(batches, [], "no batch yet: the first waits for a full one, or maxWaitMs");
  sleeps[0]!();
  assert.deepEqual(await Promise.all(first), [1, 2, 3]);
  const second = [4, 5].map((n) => commit.submit(n));
  await Promise.resolve();
  assert.deepEqual(batches, [[1, 2, 3]], "two of the last batch's three: still waiting");
  second.push(commit.submit(6));
  assert.deepEqual(await Promise.all(second), [4, 5, 6]);
  assert.equal(sleeps.length, 2, "the second wait ended without its sleep");
  commit.hurry(); // nothing waiting: nothing happens
  const lone = commit.submit(7);
  commit.hurry();
  assert.equal(await lone, 7);
  assert.equal(await commit.submit(8), 8, "after a batch of one, one item is a whole batch");
  assert.deepEqual(batches, [[1, 2, 3], [4, 5, 6], [7], [8]]);
  await commit.drain();
});

test("fillTo last-batch: callers in a closed loop go round in batches of all of them, never waiting out maxWaitMs", async () => {
  const batches: number[] = [];
  const commit = new GroupCommit<number, number>(
    async (batch) => {
      batches.push(batch.length);
      await new Promise((resolve) => setImmediate(resolve));
      return batch;
    },
    // A sleep that never ends: a round that waited it out would never finish.
    {
      maxBatch: 100,
      maxPending: 100,
      maxWaitMs: 5,
      fillTo: "last-batch",
      sleep: () => new Promise(() => {}),
    },
  );
  const callers = 5;
  const rounds = 20;
  // The first round's batch: everyone at once, past a hurry (nothing has been written yet).
  const firstRound = Array.from({ length: callers }, (_, i) => commit.submit(i));
  commit.hurry();
  await Promise.all(firstRound);
  await Promise.all(
    Array.from({ length: callers }, async (_, i) => {
      for (let round = 1; round < rounds; round++) {
        // Each caller does its own work between writes (I/O: the next turn of the event loop),
        // some a few ticks longer than others.
        await new Promise((resolve) => setImmediate(resolve));
        for (let tick = 0; tick < i; tick++) await Promise.resolve();
        assert.equal(await commit.submit(round * callers + i), round * callers + i);
      }
    }),
  );
  assert.deepEqual(batches, Array(rounds).fill(callers));
});

test("bad options are refused", () => {
  const write = async (batch: number[]) => batch;
  assert.throws(() => new GroupCommit(write, { maxBatch: 0, maxPending: 1 }), RangeError);
  assert.throws(() => new GroupCommit(write, { maxBatch: 1, maxPending: 1.5 }), RangeError);
  assert.throws(() => new GroupCommit(write, { maxBatch: 1, maxPending: 1, maxWaitMs: -1 }), RangeError);
  assert.throws(
    () => new GroupCommit(write, { maxBatch: 1, maxPending: 1, fillTo: "half" as "full" }),
    RangeError,
  );
});

test("property: every caller gets its own item's result, batches keep order and stay within maxBatch, one write at a time", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 8 }),
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 60 }),
      async (maxBatch, gaps) => {
        const seen: number[][] = [];
        let writing = 0;
        const commit = new GroupCommit<number, string>(
          async (batch) => {
            writing += 1;
            assert.equal(writing, 1, "one write at a time");
            seen.push(batch);
            for (let i = 0; i < batch.length % 3; i++) await Promise.resolve();
            writing -= 1;
            return batch.map((n) => `r${n}`);
          },
          { maxBatch, maxPending: 1_000 },
        );
        const answers: Promise<string>[] = [];
        for (const [i, gap] of gaps.entries()) {
          answers.push(commit.submit(i));
          for (let g = 0; g < gap; g++) await Promise.resolve();
        }
        assert.deepEqual(
          await Promise.all(answers),
          gaps.map((_, i) => `r${i}`),
        );
        assert.deepEqual(
          seen.flat(),
          gaps.map((_, i) => i),
          "every item once, in submit order",
        );
        assert.ok(seen.every((batch) => batch.length >= 1 && batch.length <= maxBatch));
      },
    ),
  );
});

test("a caller woken by the last batch that submits at once is written in a new flush, not stranded", async () => {
  const commit = new GroupCommit<number, number>(async (batch) => batch, { maxBatch: 4, maxPending: 4 });
  assert.equal(await commit.submit(1), 1);
  // Webhooks' Batcher cleared its in-flight flag a few microtasks after its loop ended:
  // this submit landed in that window and waited for a flush that never came.
  const guard = new Promise<string>((resolve) => setTimeout(() => resolve("stranded"), 1_000).unref());
  assert.equal(await Promise.race([commit.submit(2), guard]), 2);
});

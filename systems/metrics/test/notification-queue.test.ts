/**
 * The queue both alert sinks send through, on its own: `send` never waits; past `maxQueued`
 * the oldest waiting item goes and is counted; a failing item is tried at most `attempts`
 * times, once when the error is final; `close` empties the queue and waits for the item in
 * flight.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { NotificationQueue } from "../src/clients/notification-queue.ts";

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

test("send never waits; past maxQueued the oldest waiting item is dropped, counted and reported", async () => {
  const hold = gate();
  const delivered: number[] = [];
  const reported: number[] = [];
  const queue = new NotificationQueue<number>({
    maxQueued: 2,
    onDropped: (n) => reported.push(n),
    deliver: async (n) => {
      if (n === 1) await hold.opened;
      delivered.push(n);
    },
  });
  for (const n of [1, 2, 3, 4, 5]) queue.send(n); // 1 in flight; 4 and 5 push 2 and 3 out
  assert.equal(queue.dropped, 2);
  assert.deepEqual(reported, [2, 3], "each dropped item reported once, oldest first");
  hold.open();
  for (let i = 0; i < 200 && queue.delivered < 3; i++) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(delivered, [1, 4, 5], "the newest kept, in order");
  await queue.close();
});

test("a failing item is tried attempts times with a growing pause; a final error once; a later success counts", async () => {
  const tries: string[] = [];
  const failed: string[] = [];
  let flaky = 2;
  const queue = new NotificationQueue<string>({
    attempts: 3,
    retryBaseMs: 5,
    isFinal: (error) => (error as Error).message === "final",
    deliver: async (item) => {
      tries.push(item);
      if (item === "down") throw new Error("503");
      if (item === "bad") throw new Error("final");
      if (item === "flaky" && flaky-- > 0) throw new Error("503");
    },
    onFailed: (_error, item) => failed.push(item),
  });
  for (const item of ["down", "bad", "flaky"]) queue.send(item);
  for (let i = 0; i < 200 && queue.delivered + failed.length < 3; i++)
    await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(failed, ["down", "bad"]);
  assert.equal(tries.filter((t) => t === "down").length, 3, "bounded by attempts");
  assert.equal(tries.filter((t) => t === "bad").length, 1, "a final error is not retried");
  assert.equal(tries.filter((t) => t === "flaky").length, 3, "two failures, then delivered");
  assert.equal(queue.delivered, 1);
  await queue.close();
});

test("close empties the queue and waits for the item in flight; later sends are ignored", async () => {
  const hold = gate();
  const delivered: number[] = [];
  const queue = new NotificationQueue<number>({
    deliver: async (n) => {
      await hold.opened;
      delivered.push(n);
    },
  });
  queue.send(1);
  queue.send(2);
  const closing = queue.close();
  hold.open();
  await closing;
  queue.send(3);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(delivered, [1]);
});

/**
 * The gateway's routed-frame queue: push order kept, the loop given a turn once a slice's time
 * is spent (what another socket's read needs), and a bound that drops everything waiting and
 * says so, as a routing gap does.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setImmediate as turn } from "node:timers/promises";
import { DeliveryQueue } from "../src/gateway/delivery-queue.ts";

test("items are delivered in push order, after the turn that pushed them", async () => {
  const delivered: number[] = [];
  const queue = new DeliveryQueue<number>({
    deliver: (n) => delivered.push(n),
    sliceMs: 1_000,
    maxPending: 100,
    onOverflow: () => assert.fail("no overflow"),
    onError: (err) => assert.fail(String(err)),
  });
  for (let n = 0; n < 10; n++) queue.push(n);
  assert.deepEqual(delivered, []);
  await turn();
  assert.deepEqual(delivered, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.equal(queue.pending, 0);
});

test("a slice ends when its time is spent: what the loop had waiting runs before the rest", async () => {
  let nowMs = 0;
  const events: string[] = [];
  const queue = new DeliveryQueue<number>({
    deliver: (n) => {
      events.push(`deliver ${n}`);
      nowMs += 2; // each delivery costs 2 ms of the loop
      if (n === 0) setImmediate(() => events.push("socket read"));
    },
    sliceMs: 5,
    maxPending: 100,
    onOverflow: () => assert.fail("no overflow"),
    onError: (err) => assert.fail(String(err)),
    nowMs: () => nowMs,
  });
  for (let n = 0; n < 6; n++) queue.push(n);
  while (queue.pending > 0) await turn();
  await turn();
  assert.deepEqual(events, [
    "deliver 0",
    "deliver 1",
    "deliver 2",
    "socket read",
    "deliver 3",
    "deliver 4",
    "deliver 5",
  ]);
});

test("past maxPending everything waiting is dropped and onOverflow told how many; later items flow", async () => {
  const delivered: number[] = [];
  const overflows: number[] = [];
  const queue = new DeliveryQueue<number>({
    deliver: (n) => delivered.push(n),
    sliceMs: 1_000,
    maxPending: 3,
    onOverflow: (dropped) => overflows.push(dropped),
    onError: (err) => assert.fail(String(err)),
  });
  for (let n = 0; n < 4; n++) queue.push(n);
  assert.deepEqual(overflows, [4]);
  assert.equal(queue.pending, 0);
  queue.push(9);
  await turn();
  assert.deepEqual(delivered, [9]);
});

test("a delivery that throws is reported and the next items still go", async () => {
  const delivered: number[] = [];
  const failures: unknown[] = [];
  const queue = new DeliveryQueue<number>({
    deliver: (n) => {
      if (n === 1) throw new Error("boom");
      delivered.push(n);
    },
    sliceMs: 1_000,
    maxPending: 10,
    onOverflow: () => assert.fail("no overflow"),
    onError: (err) => failures.push(err),
  });
  for (let n = 0; n < 3; n++) queue.push(n);
  await turn();
  assert.deepEqual(delivered, [0, 2]);
  assert.equal((failures[0] as Error).message, "boom");
});

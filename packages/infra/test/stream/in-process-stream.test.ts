/**
 * What only the twin can show: with a ManualClock its ages, dedup windows and ack waits
 * move when the test says, with no sleeping. (The behaviour itself is the contract's.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { InProcessStreamServer, MAX_WAITING_FETCHES } from "../../src/stream/in-process-stream.ts";
import type { StreamConfig } from "../../src/stream/stream.ts";
import { streamErrors } from "../../src/stream/stream-errors.ts";

const config: StreamConfig = {
  name: "TWIN",
  subjects: ["twin.>"],
  storage: "memory",
  maxMessages: 100,
  maxBytes: 100_000,
  maxAgeMs: 10_000,
  maxMessageBytes: 1_000,
  duplicateWindowMs: 5_000,
  discard: "old",
};
const consumer = {
  name: "w",
  deliver: { from: "all" as const },
  ackWaitMs: 1_000,
  maxDeliver: 3,
  maxAckPending: 10,
};

/** A twin on `clock` whose consumer "w" has just taken its one message; `fetch` asks again. */
async function oneMessageTaken(clock: ManualClock) {
  const client = new InProcessStreamServer({ clock }).connect();
  await client.ensureStream(config);
  await client.ensureConsumer("TWIN", consumer);
  await client.publish("twin.a", "x");
  const fetch = () => client.fetch("TWIN", "w", { maxMessages: 10, expiresMs: 1 });
  assert.equal((await fetch()).length, 1);
  return { client, fetch };
}

test("the injected clock decides ages and dedup windows", async () => {
  const clock = new ManualClock(1_000_000);
  const client = new InProcessStreamServer({ clock }).connect();
  await client.ensureStream(config);
  const first = await client.publish("twin.a", "x", { msgId: "id-1" });
  assert.equal(first.duplicate, false);
  clock.advance(4_999);
  assert.equal((await client.publish("twin.a", "x", { msgId: "id-1" })).duplicate, true);
  clock.advance(1);
  assert.equal(
    (await client.publish("twin.a", "x", { msgId: "id-1" })).duplicate,
    false,
    "the window is over",
  );
  assert.equal((await client.getMessage("TWIN", first.seq))?.timeMs, 1_000_000);
  clock.advance(5_000);
  const state = await client.streamState("TWIN");
  assert.deepEqual([state.messages, state.firstSeq, state.lastSeq], [1, 2, 2], "the first is 10 s old: gone");
});

test("an ack wait measured on the injected clock: due at once after advance(), not before", async () => {
  const clock = new ManualClock(0);
  const { client, fetch } = await oneMessageTaken(clock);
  clock.advance(999);
  assert.deepEqual(await fetch(), []);
  clock.advance(1);
  const [again] = await fetch();
  assert.equal(again?.deliveryCount, 2);
  clock.advance(1_000);
  assert.equal((await fetch())[0]?.deliveryCount, 3);
  clock.advance(1_000);
  assert.deepEqual(await fetch(), [], "maxDeliver 3: given up");
  assert.equal((await client.consumerState("TWIN", "w")).ackPending, 0);
});

test("an ack wait is an interval: a wall clock stepped back neither holds a message nor frees one early", async () => {
  const clock = new ManualClock(1_000_000);
  const { fetch } = await oneMessageTaken(clock);
  clock.setWallMs(1_000_000 + 5_000); // forward 5 s (inside maxAge): the ack wait has not passed
  assert.deepEqual(await fetch(), []);
  clock.setWallMs(1_000_000 - 60_000); // back a minute, as NTP may step it
  clock.advance(1_000);
  assert.equal((await fetch())[0]?.deliveryCount, 2, "due after 1 s of monotonic time");
});

test("waiting fetches on one consumer are bounded", async () => {
  const client = new InProcessStreamServer().connect();
  await client.ensureStream(config);
  await client.ensureConsumer("TWIN", consumer);
  const waits = Array.from({ length: MAX_WAITING_FETCHES }, () =>
    client.fetch("TWIN", "w", { maxMessages: 1, expiresMs: 60_000 }),
  );
  await assert.rejects(client.fetch("TWIN", "w", { maxMessages: 1, expiresMs: 60_000 }), (e) =>
    streamErrors.is(e, "STREAM_BACKPRESSURE"),
  );
  await client.close(); // ends every wait at once
  assert.deepEqual(new Set((await Promise.all(waits)).map((r) => r.length)), new Set([0]));
});

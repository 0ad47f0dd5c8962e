/**
 * CH-20 on the real stream engine: a private nats-server with JetStream (lab's spawner, its own
 * port and store; never the shared NATS on 4222). A channel message is written once, published
 * as ONE event on the stream, and delivered by 3 slice workers — one durable consumer each —
 * every one its part of the member index. Then the nats-server is killed and restarted on its
 * store (as after a crash): the durable consumers resume and the next message reaches every
 * member the same way; and a message sent while it is down reaches every member once it is
 * back, by the outbox relay's retried publish (no sync; `channel-event-outbox.test.ts`).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openStream } from "@casebook/infra/stream/open-stream";
import type { StreamClient } from "@casebook/infra/stream/stream";
import { type SpawnedNats, spawnNats } from "@casebook/lab/spawn-nats";
import { enginesRequired } from "@casebook/lab/test-engines";
import { openChannel, receivedBy, startSystem, type TestSocket, type TestSystem } from "./system-fixture.ts";

const SLICES = 3;
const MEMBERS = 24;
/** Bound on one member's delivery (a slice worker's fetch, on a loaded machine). */
const MAX_DELIVERY_MS = 20_000;

async function fanoutCounts(sys: TestSystem): Promise<number[]> {
  const text = await (await fetch(`${sys.running.url}/metrics`)).text();
  const counts = Array.from({ length: SLICES }, () => 0);
  for (const match of text.matchAll(/^chat_fanout_members_total\{slice="(\d+)"\} (\d+)$/gm))
    counts[Number(match[1])] = Number(match[2]);
  return counts;
}

async function eventually(check: () => Promise<boolean>, maxMs: number): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  while (performance.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return check();
}

test("CH-20 on NATS JetStream: a channel message written once, ONE stream event, 3 durable slice consumers each delivering its part; after a nats-server crash and restart the next message reaches every member", async (t) => {
  let nats: SpawnedNats;
  try {
    // The fan-out stream reserves 1 GiB (channel-fanout.ts): the store bound must hold it (a bound, not an allocation).
    nats = await spawnNats({ install: false, maxFileStoreBytes: 2 * 1_024 ** 3 });
  } catch (err) {
    if (enginesRequired) throw err;
    return t.skip(`no nats-server with JetStream here: ${(err as Error).message}`);
  }
  const streamName = `CHAT_T_${randomUUID().slice(0, 8)}`;
  let sys: TestSystem | undefined;
  let probe: StreamClient | undefined;
  const sockets: TestSocket[] = [];
  t.after(async () => {
    await Promise.allSettled(sockets.map((s) => s.close()));
    await Promise.allSettled([probe?.close()]);
    await Promise.allSettled([sys?.close()]);
    await nats.stop();
  });
  sys = await startSystem({
    NATS_URL: nats.url,
    CHAT_STREAM: streamName,
    CHAT_CHANNEL_SLICES: String(SLICES),
  });
  probe = await openStream({ system: "chat-test", url: nats.url, env: {} });
  const { chatId, owner } = await openChannel(sys, "big", MEMBERS, sockets);

  const sendAndSee = async (body: string) => {
    const before = await fanoutCounts(sys!);
    const eventsBefore = (await probe!.streamState(streamName)).messages;
    const sent = await sys!.api<{ message: { id: string; seq: string } }>(
      owner,
      "POST",
      `/v1/conversations/${chatId}/messages`,
      { clientMsgId: randomUUID(), body },
    );
    assert.equal(sent.status, 201);
    assert.equal(
      await receivedBy(sockets, sent.json.message.id, MAX_DELIVERY_MS),
      MEMBERS,
      `every member got "${body}" once`,
    );
    const after = await fanoutCounts(sys!);
    const bySlice = after.map((n, k) => n - before[k]!);
    assert.equal(
      bySlice.reduce((a, b) => a + b, 0),
      MEMBERS,
      `each member in exactly one slice (${bySlice})`,
    );
    assert.ok(
      bySlice.every((n) => n > 0),
      `every slice delivered a part: ${bySlice}`,
    );
    assert.equal(
      (await probe!.streamState(streamName)).messages - eventsBefore,
      1,
      "one publish per message",
    );
    return sent.json.message;
  };

  const first = await sendAndSee("para todos");
  assert.equal(first.seq, "1", "a commit offset");
  // Every slice's durable consumer acked its copy: nothing pending, nothing in flight.
  assert.ok(
    await eventually(async () => {
      const states = await Promise.all(
        Array.from({ length: SLICES }, (_, k) => probe!.consumerState(streamName, `slice-${k}-of-${SLICES}`)),
      );
      return states.every((s) => s.pending === 0 && s.ackPending === 0);
    }, 10_000),
    "each slice consumer acked its event",
  );

  // A crash of the stream engine: the store stays; the consumers and the publisher reconnect.
  await nats.kill();
  await sleep(300);
  await nats.restart();
  let second: { seq: string } | undefined;
  assert.ok(
    await eventually(async () => {
      try {
        second = await sendAndSee(`depois da queda ${randomUUID().slice(0, 4)}`);
        return true;
      } catch {
        return false;
      }
    }, 30_000),
    "after the restart a message reaches every member through the slices",
  );
  assert.ok(
    BigInt(second!.seq) >= 2n,
    "offsets keep counting (a message sent while NATS was back but not yet reconnected stays in the history)",
  );

  // Sent while the stream engine is down: stored and answered at once; its publish fails or
  // waits, and its event waits in the outbox, which the relay publishes once the engine is
  // back — every member gets it without a sync.
  await nats.kill();
  const during = await sys.api<{ message: { id: string } }>(
    owner,
    "POST",
    `/v1/conversations/${chatId}/messages`,
    {
      clientMsgId: randomUUID(),
      body: "durante a queda",
    },
  );
  assert.equal(during.status, 201, "stored while the stream is down");
  await sleep(1_000);
  await nats.restart();
  assert.equal(
    await receivedBy(sockets, during.json.message.id, 30_000),
    MEMBERS,
    "every member got the message sent during the outage",
  );
});

/**
 * JetStream hurt on purpose, on a private nats-server (lab's spawnNats), never the machine's:
 * killed and restarted mid-consumption, and paused. What the stream port must keep: a
 * file-stored stream and its durable consumer survive the crash, nothing published is lost,
 * what was not acked comes back; and every wait on a stalled server ends, typed, in its bound.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openJetStream } from "@casebook/infra/stream/jetstream-stream";
import type {
  ConsumerConfig,
  StreamClient,
  StreamConfig,
  StreamMessage,
} from "@casebook/infra/stream/stream";
import { streamErrors } from "@casebook/infra/stream/stream-errors";
import { type SpawnedNats, spawnNats } from "@casebook/lab/spawn-nats";

const stream: StreamConfig = {
  name: "FAULTS",
  subjects: ["faults.>"],
  storage: "file",
  maxMessages: 10_000,
  maxBytes: 16 * 1024 * 1024,
  maxAgeMs: 3_600_000,
  maxMessageBytes: 4_096,
  duplicateWindowMs: 60_000,
  discard: "old",
};
const ACK_WAIT_MS = 500;
const consumer: ConsumerConfig = {
  name: "worker",
  deliver: { from: "all" },
  ackWaitMs: ACK_WAIT_MS,
  maxDeliver: 10,
  maxAckPending: 1_000,
};
const REQUEST_TIMEOUT_MS = 400;

function client(url: string): Promise<StreamClient> {
  return openJetStream({
    url,
    name: "casebook-stream-faults",
    connectTimeoutMs: 1_000,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    reconnectWaitMs: 50,
    maxReconnectAttempts: 200,
    pingIntervalMs: 1_000,
  });
}

/**
 * Fetches and acks until at least `atLeast` messages came and a fetch comes back empty, or
 * `withinMs` passed, riding out the typed errors of a reconnect.
 */
async function drain(
  c: StreamClient,
  name: string,
  atLeast: number,
  withinMs: number,
): Promise<StreamMessage[]> {
  const got: StreamMessage[] = [];
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    try {
      const batch = await c.fetch(stream.name, name, { maxMessages: 100, expiresMs: 300 });
      if (batch.length === 0 && got.length >= atLeast) break;
      for (const message of batch) await message.ack();
      got.push(...batch);
    } catch (error) {
      if (!streamErrors.is(error, "STREAM_TIMEOUT") && !streamErrors.is(error, "STREAM_UNAVAILABLE"))
        throw error;
    }
  }
  return got;
}

/** Publishes 20, takes 10 and acks the first 5, hurts the server with `fault`, then drains. */
async function consumeAcross(
  c: StreamClient,
  name: string,
  fault: () => Promise<void>,
): Promise<{ acked: Set<number>; after: StreamMessage[]; firstSeq: number }> {
  await c.ensureConsumer(stream.name, { ...consumer, name, filterSubject: `faults.${name}.>` });
  let firstSeq = 0;
  for (let i = 1; i <= 20; i++) {
    const ack = await c.publish(`faults.${name}.${i % 2 ? "odd" : "even"}`, `m${i}`, {
      msgId: `${name}-${i}`,
    });
    firstSeq ||= ack.seq;
  }
  const firstBatch = await c.fetch(stream.name, name, { maxMessages: 10, expiresMs: 1_000 });
  assert.equal(firstBatch.length, 10);
  const acked = new Set<number>();
  for (const message of firstBatch.slice(0, 5)) {
    await message.ack(); // confirmed by the server before the fault
    acked.add(message.seq);
  }
  await fault();
  return { acked, after: await drain(c, name, 20 - acked.size, 10_000), firstSeq };
}

/**
 * Every message acked before the fault or delivered after it, the unacked among them again.
 * `countsKept`: the consumer's delivery counts survived (a graceful stop flushes them; a SIGKILL
 * may lose the last ones, so an unacked message can come back as a first delivery).
 */
function assertNothingLost(
  run: { acked: Set<number>; after: StreamMessage[]; firstSeq: number },
  countsKept: boolean,
): void {
  const seqs = run.after.map((m) => m.seq);
  assert.deepEqual(
    [...new Set([...run.acked, ...seqs])].sort((a, b) => a - b),
    Array.from({ length: 20 }, (_, i) => run.firstSeq + i),
    "every message was acked before the fault or delivered after it",
  );
  for (let seq = run.firstSeq + 5; seq < run.firstSeq + 10; seq++) {
    const again = run.after.find((m) => m.seq === seq);
    assert.ok(again, `unacked seq ${seq} came back`);
    if (countsKept) assert.ok(again.deliveryCount >= 2, `unacked seq ${seq} came back as a redelivery`);
  }
}

describe("stream faults (private nats-server)", () => {
  let nats: SpawnedNats;
  let c: StreamClient;
  before(async () => {
    nats = await spawnNats();
    c = await client(nats.url);
  });
  after(async () => {
    await c?.close();
    await nats?.stop();
  });

  test("ST-F1 killed (SIGKILL) and restarted mid-consumption: the durable consumer resumes, nothing is lost, the unacked come back", async () => {
    await c.ensureStream(stream);
    const run = await consumeAcross(c, "crash", async () => {
      await nats.kill();
      await nats.restart();
    });
    assertNothingLost(run, false);
    // JetStream writes a consumer's state (acks, delivery counts) asynchronously: what changed in
    // the last ~100 ms before a SIGKILL can be lost, so acked messages may come once more, and
    // unacked ones as first deliveries. At least once, never lost.
    assert.ok(
      run.after.length >= 15 && run.after.length <= 20,
      `${run.after.length} delivered after the crash`,
    );
    assert.equal(
      (await c.streamState(stream.name)).lastSeq,
      run.firstSeq + 19,
      "the file store kept every message",
    );
  });

  test("ST-F1b a graceful restart keeps every confirmed ack: only the unacked come back", async () => {
    await c.ensureStream(stream);
    const run = await consumeAcross(c, "graceful", () => nats.restart());
    assertNothingLost(run, true);
    const again = run.after.filter((m) => run.acked.has(m.seq)).map((m) => m.seq);
    assert.deepEqual(again, [], "no acked message is delivered again");
  });

  test("ST-F2 paused: publish, ack and fetch end within their bounds with STREAM_TIMEOUT; a retry with the same msgId stores once", async () => {
    await c.ensureStream(stream);
    const before = (await c.streamState(stream.name)).messages;
    await c.publish("faults.pre", "x");
    await c.ensureConsumer(stream.name, { ...consumer, name: "paused" });
    const [pending] = await c.fetch(stream.name, "paused", { maxMessages: 1, expiresMs: 1_000 });
    nats.pause();
    try {
      let started = performance.now();
      await assert.rejects(c.publish("faults.paused", "p", { msgId: "paused-1", timeoutMs: 300 }), (e) =>
        streamErrors.is(e, "STREAM_TIMEOUT"),
      );
      const publishMs = performance.now() - started;
      assert.ok(publishMs >= 250 && publishMs < 1_500, `publish gave up after ${publishMs} ms`);
      started = performance.now();
      await assert.rejects(pending?.ack() ?? Promise.resolve(), (e) => streamErrors.is(e, "STREAM_TIMEOUT"));
      assert.ok(performance.now() - started < REQUEST_TIMEOUT_MS + 1_000);
      started = performance.now();
      await assert.rejects(c.fetch(stream.name, "paused", { maxMessages: 1, expiresMs: 300 }), (e) =>
        streamErrors.is(e, "STREAM_TIMEOUT"),
      );
      assert.ok(performance.now() - started < 300 + 2 * REQUEST_TIMEOUT_MS + 1_000);
    } finally {
      nats.resume();
    }
    // The timed-out publish may have been stored after all; the retry with its msgId makes that harmless.
    let retried: Awaited<ReturnType<StreamClient["publish"]>> | undefined;
    for (let i = 0; i < 20 && !retried; i++) {
      retried = await c.publish("faults.paused", "p", { msgId: "paused-1" }).catch((error) => {
        if (streamErrors.is(error, "STREAM_TIMEOUT") || streamErrors.is(error, "STREAM_UNAVAILABLE"))
          return undefined;
        throw error;
      });
    }
    assert.ok(retried, "publish works again after resume");
    assert.equal((await c.streamState(stream.name)).messages, before + 2, "the pre message and p, once");
  });
});

/**
 * ONE contract for the stream port, run on the in-process twin and on NATS JetStream:
 * dedup ids, durable consumers, ack / redelivery / nak / max deliveries, replay, ordering
 * per subject, wildcard filters, bounded retention. Each case makes its own stream (a
 * unique name and subject prefix) and deletes it, so it shares the machine's NATS.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { ConsumerConfig, StreamClient, StreamConfig } from "@casebook/infra/stream/stream";
import { startStreamConsumer } from "@casebook/infra/stream/stream-consumer";
import { streamErrors } from "@casebook/infra/stream/stream-errors";
import { contractSuite } from "@casebook/lab/contract-suite";
import { type StreamSubject, streamBackends } from "@casebook/lab/stream-backends";
import { uniqueName } from "@casebook/lab/test-engines";

/** Short enough to keep the suite fast, long enough that a loaded machine does not redeliver early. */
const ACK_WAIT_MS = 400;

interface Scope {
  stream: string;
  /** The stream's subject prefix: subjects are `${prefix}.x`. */
  prefix: string;
}

function streamConfig(scope: Scope, overrides: Partial<StreamConfig> = {}): StreamConfig {
  return {
    name: scope.stream,
    subjects: [`${scope.prefix}.>`],
    storage: "memory",
    maxMessages: 10_000,
    maxBytes: 10 * 1024 * 1024,
    maxAgeMs: 3_600_000,
    maxMessageBytes: 64 * 1024,
    duplicateWindowMs: 120_000,
    discard: "old",
    ...overrides,
  };
}

function consumerConfig(overrides: Partial<ConsumerConfig> = {}): ConsumerConfig {
  return {
    name: "worker",
    deliver: { from: "all" },
    ackWaitMs: ACK_WAIT_MS,
    maxDeliver: 5,
    maxAckPending: 1_000,
    ...overrides,
  };
}

/** Runs `body` on a fresh stream, deleted afterwards whatever happens. */
async function withStream(
  client: StreamClient,
  overrides: Partial<StreamConfig>,
  body: (scope: Scope) => Promise<void>,
): Promise<void> {
  const name = uniqueName("ST");
  const scope = { stream: name, prefix: name.toLowerCase() };
  await client.ensureStream(streamConfig(scope, overrides));
  try {
    await body(scope);
  } finally {
    await client.deleteStream(scope.stream);
  }
}

async function fetchAll(client: StreamClient, scope: Scope, consumer = "worker", expiresMs = 300) {
  return client.fetch(scope.stream, consumer, { maxMessages: 100, expiresMs });
}

/** Polls `check` every 25 ms until it holds, failing after `withinMs`. */
async function eventually(check: () => Promise<boolean>, withinMs: number): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (!(await check())) {
    if (performance.now() > deadline) assert.fail(`condition not met within ${withinMs} ms`);
    await sleep(25);
  }
}

contractSuite<StreamSubject>("stream", streamBackends(), (it) => {
  it("ST-01 a second publish with the same msgId inside the window is acknowledged as a duplicate and not stored", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      const first = await client.publish(`${scope.prefix}.a`, "one", { msgId: "order-1" });
      const again = await client.publish(`${scope.prefix}.a`, "one again", { msgId: "order-1" });
      const other = await client.publish(`${scope.prefix}.a`, "two", { msgId: "order-2" });
      assert.deepEqual([first.duplicate, again.duplicate, other.duplicate], [false, true, false]);
      assert.equal(again.seq, first.seq, "the duplicate names the first copy's sequence");
      assert.equal(first.stream, scope.stream);
      const state = await client.streamState(scope.stream);
      assert.equal(state.messages, 2);
      assert.equal(state.lastSeq, other.seq);
      const stored = await client.getMessage(scope.stream, first.seq);
      assert.equal(new TextDecoder().decode(stored?.data), "one");
      assert.equal(stored?.headers["Nats-Msg-Id"], "order-1");
    });
  });

  it("ST-01b past the duplicate window the same msgId is stored again", async ({ client }) => {
    await withStream(client, { duplicateWindowMs: 300 }, async (scope) => {
      assert.equal((await client.publish(`${scope.prefix}.a`, "x", { msgId: "tick" })).duplicate, false);
      assert.equal((await client.publish(`${scope.prefix}.a`, "x", { msgId: "tick" })).duplicate, true);
      await eventually(
        async () => !(await client.publish(`${scope.prefix}.a`, "x", { msgId: "tick" })).duplicate,
        3_000,
      );
      assert.equal((await client.streamState(scope.stream)).messages, 2);
    });
  });

  it("ST-02 a durable consumer resumes where it left off after its client goes away", async (subject) => {
    const { client } = subject;
    await withStream(client, {}, async (scope) => {
      for (let i = 1; i <= 5; i++) await client.publish(`${scope.prefix}.a`, `m${i}`);
      await client.ensureConsumer(scope.stream, consumerConfig());
      const gone = await subject.connect();
      const firstBatch = await gone.fetch(scope.stream, "worker", { maxMessages: 3, expiresMs: 500 });
      assert.deepEqual(
        firstBatch.map((m) => m.text()),
        ["m1", "m2", "m3"],
      );
      for (const message of firstBatch) await message.ack();
      await gone.close();
      const next = await subject.connect();
      await next.ensureConsumer(scope.stream, consumerConfig()); // what a restarted process does
      const rest = await next.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 500 });
      assert.deepEqual(
        rest.map((m) => m.text()),
        ["m4", "m5"],
      );
      assert.ok(rest.every((m) => m.deliveryCount === 1));
      for (const message of rest) await message.ack();
      assert.deepEqual(await fetchAll(next, scope), []);
    });
  });

  it("ST-03 an unacked message is redelivered after the ack wait, with its delivery count; an acked one is not", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "keep");
      await client.publish(`${scope.prefix}.a`, "done");
      await client.ensureConsumer(scope.stream, consumerConfig());
      const first = await fetchAll(client, scope);
      assert.deepEqual(
        first.map((m) => [m.text(), m.deliveryCount]),
        [
          ["keep", 1],
          ["done", 1],
        ],
      );
      await first[1]?.ack();
      const started = performance.now();
      // The fetch ends the moment "a" comes back (one ack wait); the long bound is for a loaded
      // machine: a CI run saw no redelivery within 3 s, with nats-server sharing 2 cores with 3 suites.
      const again = await client.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 10_000 });
      const waitedMs = performance.now() - started;
      assert.deepEqual(
        again.map((m) => [m.text(), m.deliveryCount]),
        [["keep", 2]],
      );
      assert.ok(waitedMs >= ACK_WAIT_MS * 0.5, `redelivered after ${waitedMs} ms, before the ack wait`);
      await again[0]?.ack();
      assert.deepEqual(await fetchAll(client, scope, "worker", ACK_WAIT_MS * 2), []);
      const state = await client.consumerState(scope.stream, "worker");
      assert.deepEqual([state.ackPending, state.pending], [0, 0]);
    });
  });

  it("ST-17 deliverySeq counts the consumer's deliveries one by one, redeliveries included", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      for (const text of ["a", "b", "c"]) await client.publish(`${scope.prefix}.a`, text);
      await client.ensureConsumer(scope.stream, consumerConfig());
      const first = await client.fetch(scope.stream, "worker", { maxMessages: 2, expiresMs: 300 });
      await first[1]?.ack();
      const next = await client.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 300 });
      await next[0]?.ack();
      // The fetch ends the moment "a" comes back (one ack wait); the long bound is for a loaded
      // machine: a CI run saw no redelivery within 3 s, with nats-server sharing 2 cores with 3 suites.
      const again = await client.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 10_000 });
      await again[0]?.ack();
      assert.deepEqual(
        [...first, ...next, ...again].map((m) => [m.text(), m.deliveryCount, m.deliverySeq]),
        [
          ["a", 1, 1],
          ["b", 1, 2],
          ["c", 1, 3],
          ["a", 2, 4],
        ],
      );
    });
  });

  it("ST-18 ackAll acks a fetched batch at once: none comes back, nothing stays pending", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      for (let i = 0; i < 5; i++) await client.publish(`${scope.prefix}.a`, `m${i}`);
      await client.ensureConsumer(scope.stream, consumerConfig());
      await client.ackAll([]);
      const batch = await fetchAll(client, scope);
      assert.equal(batch.length, 5);
      await client.ackAll(batch);
      assert.deepEqual((await client.consumerState(scope.stream, "worker")).ackPending, 0);
      assert.deepEqual(await fetchAll(client, scope, "worker", ACK_WAIT_MS * 2), []);
    });
  });

  it("ST-04 nak redelivers at once, nak with a delay not before it; working() restarts the ack wait", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "x");
      await client.ensureConsumer(scope.stream, consumerConfig({ ackWaitMs: 5_000 }));
      const [first] = await fetchAll(client, scope);
      await first?.nak();
      const [second] = await fetchAll(client, scope, "worker", 1_000);
      assert.equal(second?.deliveryCount, 2);
      const delayMs = 600;
      await second?.nak(delayMs);
      assert.deepEqual(await fetchAll(client, scope, "worker", 200), [], "redelivered before its delay");
      const [third] = await fetchAll(client, scope, "worker", 2_000);
      assert.equal(third?.deliveryCount, 3);
      await third?.working();
      await third?.ack();
      assert.deepEqual(await fetchAll(client, scope, "worker", 200), []);
    });
  });

  it("ST-05 a message is delivered at most maxDeliver times", async ({ client }) => {
    await withStream(client, {}, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "poison");
      await client.ensureConsumer(scope.stream, consumerConfig({ maxDeliver: 2, ackWaitMs: 5_000 }));
      const counts: number[] = [];
      for (let i = 0; i < 3; i++) {
        const [message] = await fetchAll(client, scope, "worker", 400);
        if (!message) break;
        counts.push(message.deliveryCount);
        await message.nak();
      }
      assert.deepEqual(counts, [1, 2]);
    });
  });

  it("ST-06 term() stops redelivery; ackPolicy none delivers each message once", async ({ client }) => {
    await withStream(client, {}, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "bad");
      await client.ensureConsumer(scope.stream, consumerConfig());
      const [bad] = await fetchAll(client, scope);
      await bad?.term();
      assert.deepEqual(await fetchAll(client, scope, "worker", ACK_WAIT_MS * 2), []);
      await client.ensureConsumer(scope.stream, consumerConfig({ name: "tail", ackPolicy: "none" }));
      assert.equal((await fetchAll(client, scope, "tail")).length, 1);
      assert.deepEqual(await fetchAll(client, scope, "tail", ACK_WAIT_MS * 2), []);
    });
  });

  it("ST-07 replay from a sequence and from a time; getMessage reads one by sequence", async ({ client }) => {
    await withStream(client, {}, async (scope) => {
      for (let i = 1; i <= 3; i++) await client.publish(`${scope.prefix}.a`, `m${i}`);
      await sleep(20);
      const boundaryMs = Date.now();
      await sleep(20);
      for (let i = 4; i <= 5; i++) await client.publish(`${scope.prefix}.a`, `m${i}`);
      await client.ensureConsumer(
        scope.stream,
        consumerConfig({ name: "from3", deliver: { from: "sequence", sequence: 3 } }),
      );
      assert.deepEqual(
        (await fetchAll(client, scope, "from3")).map((m) => m.text()),
        ["m3", "m4", "m5"],
      );
      await client.ensureConsumer(
        scope.stream,
        consumerConfig({ name: "fromT", deliver: { from: "time", timeMs: boundaryMs } }),
      );
      assert.deepEqual(
        (await fetchAll(client, scope, "fromT")).map((m) => m.text()),
        ["m4", "m5"],
      );
      await client.ensureConsumer(scope.stream, consumerConfig({ name: "fresh", deliver: { from: "new" } }));
      await client.publish(`${scope.prefix}.a`, "m6");
      assert.deepEqual(
        (await fetchAll(client, scope, "fresh")).map((m) => m.text()),
        ["m6"],
      );
      const stored = await client.getMessage(scope.stream, 2);
      assert.equal(new TextDecoder().decode(stored?.data), "m2");
      assert.equal(stored?.subject, `${scope.prefix}.a`);
      assert.ok(stored && stored.timeMs < boundaryMs + 1);
      assert.equal(await client.getMessage(scope.stream, 99), undefined);
    });
  });

  it("ST-08 one consumer gets each subject's messages in publish order", async ({ client }) => {
    await withStream(client, {}, async (scope) => {
      const published: string[] = [];
      for (let i = 0; i < 30; i++) {
        const subject = `${scope.prefix}.${["a", "b", "c"][i % 3]}`;
        published.push(`${subject}#${i}`);
        await client.publish(subject, String(i));
      }
      await client.ensureConsumer(scope.stream, consumerConfig());
      const received: string[] = [];
      while (received.length < published.length) {
        const batch = await client.fetch(scope.stream, "worker", { maxMessages: 7, expiresMs: 500 });
        assert.ok(batch.length > 0, "stalled before every message arrived");
        for (const message of batch) {
          received.push(`${message.subject}#${message.text()}`);
          await message.ack();
        }
      }
      for (const letter of ["a", "b", "c"]) {
        const ofSubject = (list: string[]) => list.filter((s) => s.startsWith(`${scope.prefix}.${letter}#`));
        assert.deepEqual(ofSubject(received), ofSubject(published));
      }
      assert.deepEqual(received, published, "one stream is totally ordered");
    });
  });

  it("ST-09 subject filters: > matches one or more tokens, * exactly one; a stream only takes its subjects", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      const p = scope.prefix;
      for (const s of [`${p}.metrics.cpu`, `${p}.metrics.cpu.host1`, `${p}.chat.room`, `${p}.metrics.mem`]) {
        await client.publish(s, s);
      }
      await client.ensureConsumer(
        scope.stream,
        consumerConfig({ name: "all", filterSubject: `${p}.metrics.>` }),
      );
      await client.ensureConsumer(
        scope.stream,
        consumerConfig({ name: "one", filterSubject: `${p}.metrics.*` }),
      );
      await client.ensureConsumer(
        scope.stream,
        consumerConfig({ name: "exact", filterSubject: `${p}.chat.room` }),
      );
      assert.deepEqual(
        (await fetchAll(client, scope, "all")).map((m) => m.subject),
        [`${p}.metrics.cpu`, `${p}.metrics.cpu.host1`, `${p}.metrics.mem`],
      );
      assert.deepEqual(
        (await fetchAll(client, scope, "one")).map((m) => m.subject),
        [`${p}.metrics.cpu`, `${p}.metrics.mem`],
      );
      assert.deepEqual(
        (await fetchAll(client, scope, "exact")).map((m) => m.subject),
        [`${p}.chat.room`],
      );
      const state = await client.consumerState(scope.stream, "all");
      assert.equal(state.ackPending, 3);
      await assert.rejects(client.publish(`${p}x.elsewhere`, "lost"), (e) =>
        streamErrors.is(e, "STREAM_NOT_FOUND"),
      );
    });
  });

  it("ST-10 retention: past maxMessages the oldest go (discard old) or the publish is refused (discard new)", async ({
    client,
  }) => {
    await withStream(client, { maxMessages: 3 }, async (scope) => {
      for (let i = 1; i <= 5; i++) await client.publish(`${scope.prefix}.a`, `m${i}`);
      const state = await client.streamState(scope.stream);
      assert.deepEqual([state.messages, state.firstSeq, state.lastSeq], [3, 3, 5]);
      assert.equal(await client.getMessage(scope.stream, 1), undefined);
      await client.ensureConsumer(scope.stream, consumerConfig());
      assert.deepEqual(
        (await fetchAll(client, scope)).map((m) => m.text()),
        ["m3", "m4", "m5"],
      );
    });
    await withStream(client, { maxMessages: 2, discard: "new" }, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "m1");
      await client.publish(`${scope.prefix}.a`, "m2");
      await assert.rejects(client.publish(`${scope.prefix}.a`, "m3"), (e) =>
        streamErrors.is(e, "STREAM_LIMIT_REACHED"),
      );
      assert.equal((await client.streamState(scope.stream)).messages, 2);
    });
  });

  it("ST-11 retention: maxBytes and maxAgeMs bound the stream; maxMessageBytes refuses a large message", async ({
    client,
  }) => {
    const payload = "x".repeat(1_000);
    await withStream(client, { maxBytes: 4_000 }, async (scope) => {
      for (let i = 0; i < 10; i++) await client.publish(`${scope.prefix}.a`, payload);
      const state = await client.streamState(scope.stream);
      assert.ok(state.bytes <= 4_000, `${state.bytes} bytes kept`);
      assert.ok(state.messages >= 2 && state.messages <= 3, `${state.messages} messages kept`);
      assert.equal(state.lastSeq, 10);
      await assert.rejects(client.publish(`${scope.prefix}.a`, "y".repeat(70_000)), (e) =>
        streamErrors.is(e, "STREAM_MESSAGE_TOO_LARGE"),
      );
    });
    await withStream(client, { maxAgeMs: 300, duplicateWindowMs: 300 }, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "short-lived");
      assert.equal((await client.streamState(scope.stream)).messages, 1);
      await eventually(async () => (await client.streamState(scope.stream)).messages === 0, 3_000);
    });
  });

  it("ST-12 fetch answers at once with what is there, waits for the first message, and returns [] at its expiry", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      await client.ensureConsumer(scope.stream, consumerConfig());
      let started = performance.now();
      assert.deepEqual(await fetchAll(client, scope, "worker", 300), []);
      assert.ok(performance.now() - started >= 250, "an empty fetch returned before its expiry");
      await client.publish(`${scope.prefix}.a`, "now");
      started = performance.now();
      assert.equal((await fetchAll(client, scope, "worker", 5_000)).length, 1);
      assert.ok(performance.now() - started < 2_000, "a fetch with a message waiting did not answer at once");
      const waiting = fetchAll(client, scope, "worker", 5_000);
      await sleep(100);
      started = performance.now();
      await client.publish(`${scope.prefix}.a`, "later");
      assert.deepEqual(
        (await waiting).map((m) => m.text()),
        ["later"],
      );
      assert.ok(
        performance.now() - started < 2_000,
        "a waiting fetch held its first message until its expiry",
      );
    });
  });

  it("ST-13 configuration: a changed consumer filter conflicts, mutable bounds update, overlapping streams conflict, missing names are typed", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      await client.ensureConsumer(scope.stream, consumerConfig({ filterSubject: `${scope.prefix}.a` }));
      await client.ensureConsumer(
        scope.stream,
        consumerConfig({ filterSubject: `${scope.prefix}.a`, maxDeliver: 9 }),
      );
      await assert.rejects(
        client.ensureConsumer(scope.stream, consumerConfig({ filterSubject: `${scope.prefix}.b` })),
        (e) => streamErrors.is(e, "STREAM_CONFIG_CONFLICT"),
      );
      const updated = await client.ensureStream(streamConfig(scope, { maxMessages: 50 }));
      assert.equal(updated.name, scope.stream);
      await assert.rejects(
        client.ensureStream({
          ...streamConfig(scope),
          name: `${scope.stream}_2`,
          subjects: [`${scope.prefix}.a`],
        }),
        (e) => streamErrors.is(e, "STREAM_CONFIG_CONFLICT"),
      );
      await assert.rejects(client.fetch(scope.stream, "nobody", { maxMessages: 1, expiresMs: 200 }), (e) =>
        streamErrors.is(e, "STREAM_CONSUMER_NOT_FOUND"),
      );
      await assert.rejects(client.streamState(`${scope.stream}_none`), (e) =>
        streamErrors.is(e, "STREAM_NOT_FOUND"),
      );
      assert.equal(await client.deleteConsumer(scope.stream, "worker"), true);
      assert.equal(await client.deleteConsumer(scope.stream, "worker"), false);
      await assert.rejects(client.ensureStream(streamConfig(scope, { maxMessages: 0 })), (e) =>
        streamErrors.is(e, "STREAM_CONFIG_INVALID"),
      );
    });
  });
  it("ST-14 at maxAckPending a fetch waits, and an ack from another client hands it the next message at once", async (subject) => {
    const { client } = subject;
    await withStream(client, {}, async (scope) => {
      await client.publish(`${scope.prefix}.a`, "m1");
      await client.publish(`${scope.prefix}.a`, "m2");
      await client.ensureConsumer(scope.stream, consumerConfig({ maxAckPending: 1, ackWaitMs: 10_000 }));
      const other = await subject.connect();
      const [first] = await other.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 500 });
      assert.equal(first?.text(), "m1");
      const started = performance.now();
      const waiting = client.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 5_000 });
      await sleep(200);
      await first?.ack();
      const next = await waiting;
      assert.deepEqual(
        next.map((m) => m.text()),
        ["m2"],
      );
      assert.ok(performance.now() - started < 2_000, "the waiting fetch sat out its expiry");
      await next[0]?.ack();
      await other.close();
    });
  });
  it("ST-15 close() ends a waiting fetch at once with []; a closed client cannot ack; its message comes back to another", async (subject) => {
    const { client } = subject;
    await withStream(client, {}, async (scope) => {
      await client.ensureConsumer(scope.stream, consumerConfig());
      const leaving = await subject.connect();
      const waiting = leaving.fetch(scope.stream, "worker", { maxMessages: 10, expiresMs: 5_000 });
      await sleep(100);
      const started = performance.now();
      await leaving.close();
      assert.deepEqual(await waiting, []);
      assert.ok(performance.now() - started < 1_000, "the waiting fetch outlived its client");
      await client.publish(`${scope.prefix}.a`, "m1");
      const taker = await subject.connect();
      const [taken] = await taker.fetch(scope.stream, "worker", { maxMessages: 1, expiresMs: 500 });
      await taker.close();
      await assert.rejects(taken?.ack() ?? Promise.resolve(), (e) => streamErrors.is(e, "STREAM_CLOSED"));
      const [again] = await client.fetch(scope.stream, "worker", { maxMessages: 1, expiresMs: 3_000 });
      assert.equal(again?.text(), "m1");
      // 2, or 3 on JetStream when the server still handed m1 to a pull of the just-closed client.
      assert.ok((again?.deliveryCount ?? 0) >= 2, `delivery ${again?.deliveryCount}`);
      await again?.ack();
    });
  });
  it("ST-16 startStreamConsumer handles every message in order, retries a failed one after its delay, drops a termed one", async ({
    client,
  }) => {
    await withStream(client, {}, async (scope) => {
      for (let i = 1; i <= 12; i++)
        await client.publish(`${scope.prefix}.${i % 2 ? "odd" : "even"}`, `m${i}`);
      await client.ensureConsumer(scope.stream, consumerConfig({ ackWaitMs: 5_000 }));
      const handled: string[] = [];
      const errors: unknown[] = [];
      const consumer = startStreamConsumer({
        client,
        stream: scope.stream,
        consumer: "worker",
        handle: async (message) => {
          handled.push(`${message.text()}/${message.deliveryCount}`);
          if (message.text() === "m3" && message.deliveryCount === 1) throw new Error("transient");
          if (message.text() === "m5") return "term";
          return undefined;
        },
        maxMessages: 5,
        expiresMs: 300,
        idleMs: 10,
        retryDelayMs: () => 200,
        failureBackoff: { capMs: 1_000, jitter: "none" },
        onError: (error) => errors.push(error),
      });
      try {
        await eventually(async () => handled.length === 13, 5_000);
      } finally {
        const stopping = performance.now();
        await consumer.stop();
        assert.ok(performance.now() - stopping < 2_000, "stop() waited past the fetch in progress");
      }
      assert.equal(consumer.running, false);
      const firsts = handled.filter((h) => h.endsWith("/1")).map((h) => h.split("/")[0]);
      assert.deepEqual(
        firsts,
        Array.from({ length: 12 }, (_, i) => `m${i + 1}`),
        "first deliveries in publish order",
      );
      assert.ok(handled.includes("m3/2"), "the failed message came back");
      assert.equal(errors.length, 1);
      const state = await client.consumerState(scope.stream, "worker");
      assert.deepEqual([state.ackPending, state.pending], [0, 0]);
    });
  });
});

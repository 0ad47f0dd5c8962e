import assert from "node:assert/strict";
import { test } from "node:test";
import { InProcessStreamServer } from "../../src/stream/in-process-stream.ts";
import { checkNatsUrl, parseAckSubject } from "../../src/stream/jetstream-stream.ts";
import { openStream } from "../../src/stream/open-stream.ts";
import {
  checkConsumerConfig,
  checkFetchOptions,
  checkStreamConfig,
  type StreamConfig,
} from "../../src/stream/stream.ts";
import { streamErrors } from "../../src/stream/stream-errors.ts";

const config: StreamConfig = {
  name: "CFG",
  subjects: ["cfg.>"],
  storage: "memory",
  maxMessages: 10,
  maxBytes: 1_000,
  maxAgeMs: 60_000,
  maxMessageBytes: 100,
  duplicateWindowMs: 1_000,
  discard: "old",
};

test("every stream error code has a 4xx/5xx status and a message saying what to do", () => {
  for (const [code, spec] of Object.entries(streamErrors.specs)) {
    const error = streamErrors.create(code as keyof typeof streamErrors.specs);
    assert.equal(error.code, code);
    assert.equal(error.status, spec.status);
    assert.match(code, /^STREAM_/);
    assert.ok(error.message.length > 20, code);
  }
  assert.equal(streamErrors.specs.STREAM_TIMEOUT.status, 503);
});

test("stream settings are explicit and bounded: each bad one is named", () => {
  assert.equal(checkStreamConfig(config), config);
  const bad: Array<[Partial<StreamConfig>, string]> = [
    [{ name: "has.dot" }, "name"],
    [{ subjects: [] }, "subjects"],
    [{ maxMessages: 0 }, "maxMessages"],
    [{ maxBytes: -1 }, "maxBytes"],
    [{ maxAgeMs: 1.5 }, "maxAgeMs"],
    [{ duplicateWindowMs: 120_000 }, "duplicateWindowMs"],
    [{ discard: "newest" as "new" }, "discard"],
    [{ storage: "disk" as "file" }, "storage"],
  ];
  for (const [override, setting] of bad) {
    assert.throws(
      () => checkStreamConfig({ ...config, ...override }),
      (e) => streamErrors.is(e, "STREAM_CONFIG_INVALID") && e.fields.setting === setting,
      setting,
    );
  }
  const consumer = {
    name: "c",
    deliver: { from: "all" as const },
    ackWaitMs: 1_000,
    maxDeliver: 3,
    maxAckPending: 10,
  };
  assert.equal(checkConsumerConfig(consumer), consumer);
  assert.throws(
    () => checkConsumerConfig({ ...consumer, maxDeliver: 0 }),
    (e) => streamErrors.is(e, "STREAM_CONFIG_INVALID"),
  );
  assert.throws(
    () => checkFetchOptions({ maxMessages: 100_000, expiresMs: 10 }),
    (e) => streamErrors.is(e, "STREAM_CONFIG_INVALID"),
  );
});

test("NATS_URL: nats:// or tls://, a comma-separated list; the value (it may hold a password) is never echoed", () => {
  assert.equal(checkNatsUrl("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
  assert.equal(checkNatsUrl("nats://a:4222, tls://b:4222"), "nats://a:4222,tls://b:4222");
  assert.throws(
    () => checkNatsUrl("http://user:secret@host"),
    (e) => streamErrors.is(e, "STREAM_URL_INVALID") && !JSON.stringify(e.fields).includes("secret"),
  );
});

test("the ack subject carries the delivery, in the 2.9 and the 2.10+ layouts", () => {
  assert.deepEqual(parseAckSubject("$JS.ACK.S.c.2.17.40.1796167313373132537.5"), {
    deliveryCount: 2,
    seq: 17,
    deliverySeq: 40,
    timeMs: 1796167313373,
  });
  assert.deepEqual(parseAckSubject("$JS.ACK.hub.ACCHASH.S.c.1.3.3.1796167313373132537.0.token"), {
    deliveryCount: 1,
    seq: 3,
    deliverySeq: 3,
    timeMs: 1796167313373,
  });
  assert.equal(parseAckSubject("_INBOX.x"), undefined);
});

test("openStream: the in-process twin without NATS_URL (one engine per process), JetStream with it", async () => {
  const a = await openStream({ system: "metrics", env: {} });
  const b = await openStream({ system: "chat", env: {} });
  assert.equal(a.backend, "in-process");
  await a.ensureStream({ ...config, name: "OPEN_STREAM_TEST", subjects: ["open-stream-test.>"] });
  assert.equal((await b.streamState("OPEN_STREAM_TEST")).messages, 0, "both clients see one engine");
  await b.deleteStream("OPEN_STREAM_TEST");
  await Promise.all([a.close(), b.close()]);
  await assert.rejects(a.publish("x.y", "z"), (e) => streamErrors.is(e, "STREAM_CLOSED"));
  const own = await openStream({ system: "feed", env: {}, server: new InProcessStreamServer() });
  await assert.rejects(own.streamState("OPEN_STREAM_TEST"), (e) => streamErrors.is(e, "STREAM_NOT_FOUND"));
  await assert.rejects(openStream({ system: "feed", env: { NATS_URL: "redis://x" } }), (e) =>
    streamErrors.is(e, "STREAM_URL_INVALID"),
  );
  await assert.rejects(openStream({ system: "Bad Name", env: {} }), (e) =>
    streamErrors.is(e, "STREAM_CONFIG_INVALID"),
  );
});

test("openStream on an unreachable NATS fails at the start, typed, within its connect bound", async () => {
  const started = performance.now();
  await assert.rejects(
    openStream({
      system: "feed",
      env: { NATS_URL: "nats://127.0.0.1:1" },
      jetstream: { connectTimeoutMs: 500 },
    }),
    (e) => streamErrors.is(e, "STREAM_UNAVAILABLE"),
  );
  assert.ok(performance.now() - started < 3_000);
});

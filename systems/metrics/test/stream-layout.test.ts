/**
 * MT-06: the sample stream's partition count is kept with the stream (src/store/stream-layout.ts):
 * a new stream gets the count set or the default, an existing one keeps its own, an older
 * stream written before the count was kept reads as the 16 it was written with, a different
 * setting is refused at the start naming both counts, and concurrent first starts agree. On the
 * in-process log and on a private nats-server (JetStream, file storage), which is restarted in
 * between: the count survives it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { InProcessStreamServer } from "@casebook/infra/stream/in-process-stream";
import { openStream } from "@casebook/infra/stream/open-stream";
import type { StreamClient } from "@casebook/infra/stream/stream";
import { findExecutable } from "@casebook/lab/executables";
import { spawnNats } from "@casebook/lab/spawn-nats";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { errors } from "../src/errors.ts";
import { SampleStream } from "../src/store/sample-stream.ts";
import {
  DEFAULT_PARTITIONS,
  LAYOUT_STREAM,
  LAYOUT_STREAM_CONFIG,
  LAYOUT_SUBJECT,
  streamPartitions,
  UNRECORDED_PARTITIONS,
} from "../src/store/stream-layout.ts";

const T0 = Date.UTC(2026, 0, 1);

async function refused(client: StreamClient, configured: number, recorded: number): Promise<void> {
  await assert.rejects(streamPartitions(client, { configured }), (error: unknown) => {
    assert.ok(errors.is(error, "METRICS_CONFIG_INVALID"), String(error));
    assert.match(
      error.message,
      new RegExp(`METRICS_PARTITIONS=${configured}, but .* created with ${recorded} partitions`),
    );
    assert.deepEqual(
      { field: error.fields.field, value: error.fields.value, recorded: error.fields.recorded },
      { field: "METRICS_PARTITIONS", value: configured, recorded },
    );
    return true;
  });
}

describe("the stream's partition count (in-process log)", () => {
  test("MT-06 a new stream takes the default when none is set, and keeps it", async () => {
    const client = new InProcessStreamServer().connect();
    assert.equal(await streamPartitions(client, { configured: undefined }), DEFAULT_PARTITIONS);
    assert.equal(await streamPartitions(client, { configured: undefined }), DEFAULT_PARTITIONS);
    assert.equal(await streamPartitions(client, { configured: DEFAULT_PARTITIONS }), DEFAULT_PARTITIONS);
  });

  test("MT-06 a count set for a new stream is kept: unset later reads it, another count is refused naming both", async () => {
    const client = new InProcessStreamServer().connect();
    assert.equal(await streamPartitions(client, { configured: 8 }), 8);
    assert.equal(await streamPartitions(client, { configured: undefined }), 8);
    await refused(client, 3, 8);
    assert.equal(await streamPartitions(client, { configured: 8 }), 8, "the refusal changed nothing");
  });

  test("MT-06 a stream written before the count was kept reads as the 16 it was written with", async () => {
    const client = new InProcessStreamServer().connect();
    const older = new SampleStream(client, { partitions: UNRECORDED_PARTITIONS, retentionMs: 3_600_000 });
    await older.ensure();
    await older.publish("acme", [
      { labels: labelsFromRecord({ __name__: "up", job: "api" }), samples: [{ t: T0, v: 1 }] },
    ]);
    assert.equal(await streamPartitions(client, { configured: undefined }), UNRECORDED_PARTITIONS);
    await refused(client, DEFAULT_PARTITIONS, UNRECORDED_PARTITIONS);
  });

  test("MT-06 a late second layout (a first start that stalled past the duplicate window) does not override the first", async () => {
    const client = new InProcessStreamServer().connect();
    assert.equal(await streamPartitions(client, { configured: 2 }), 2);
    await client.publish(LAYOUT_SUBJECT, JSON.stringify({ partitions: 9 }), { msgId: "a late start" });
    assert.equal(await streamPartitions(client, { configured: undefined }), 2);
    await refused(client, 9, 2);
  });

  test("MT-06 a layout message that is not one (hand-written) stops the start with a clear error, not a crash", async () => {
    const client = new InProcessStreamServer().connect();
    await client.ensureStream(LAYOUT_STREAM_CONFIG);
    await client.publish(LAYOUT_SUBJECT, "sixteen");
    await assert.rejects(streamPartitions(client, { configured: undefined }), (error: unknown) => {
      assert.ok(errors.is(error, "METRICS_CONFIG_INVALID"), String(error));
      assert.match(error.message, /METRICS_LAYOUT.*not one: "sixteen"/);
      return true;
    });
    // Nor a count past METRICS_PARTITIONS's bound (a consumer per partition).
    await client.deleteStream(LAYOUT_STREAM);
    await client.ensureStream(LAYOUT_STREAM_CONFIG);
    await client.publish(LAYOUT_SUBJECT, JSON.stringify({ partitions: 1_000_000 }));
    await assert.rejects(
      streamPartitions(client, { configured: undefined }),
      /not one: \{"partitions":1000000\}/,
    );
  });

  test("MT-06 concurrent first starts with different settings agree on the first count stored", async () => {
    const server = new InProcessStreamServer();
    const counts = await Promise.allSettled(
      [2, 8, undefined, 5].map((configured) => streamPartitions(server.connect(), { configured })),
    );
    const agreed = counts.filter((c) => c.status === "fulfilled").map((c) => c.value);
    assert.ok(agreed.length >= 1);
    assert.equal(new Set(agreed).size, 1, `one count for every start that was not refused: ${agreed}`);
    const recorded = agreed[0]!;
    for (const [i, configured] of [2, 8, undefined, 5].entries())
      assert.equal(
        counts[i]!.status,
        configured === undefined || configured === recorded ? "fulfilled" : "rejected",
        `a start with ${configured} against the recorded ${recorded}`,
      );
  });
});

const skip = findExecutable("nats-server") === undefined ? "nats-server is not installed" : false;

test("MT-06 on JetStream: a new stream's count survives a restart of nats-server, and another count is still refused", {
  skip,
}, async (t) => {
  const nats = await spawnNats();
  t.after(() => nats.stop());
  const first = await openStream({ system: "metrics", url: nats.url });
  // No sample stream yet (JetStream answers "not found"): a new stream's default.
  assert.equal(await streamPartitions(first, { configured: undefined }), DEFAULT_PARTITIONS);
  await first.close();
  await nats.restart();
  const second = await openStream({ system: "metrics", url: nats.url });
  t.after(() => second.close());
  assert.equal(await streamPartitions(second, { configured: undefined }), DEFAULT_PARTITIONS);
  await refused(second, 6, DEFAULT_PARTITIONS);
});

/**
 * MT-07/10: the rollup builder applies batches (several messages unacked at once), so a
 * redelivery can arrive behind newer messages. Here messages 1–4 of the builder's consumer
 * are taken by hand, 3–4 acked and 1–2 left to come back after the ack wait; the builder then
 * gets 5… first, reads the gap 1–4 from the stream by seq and applies it before them, in one
 * commit, and later recognises 1–2 as applied: every sample counted once, none late.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { InProcessStreamServer } from "@casebook/infra/stream/in-process-stream";
import { eventually } from "@casebook/lab/eventually";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { ONE_MINUTE_MS, rollupPoints } from "../src/domain/rollup.ts";
import { RollupStore } from "../src/store/rollup-store.ts";
import { SAMPLE_STREAM, SAMPLE_SUBJECT_PREFIX, SampleStream } from "../src/store/sample-stream.ts";
import { ROLLUP_BUILDER_CONSUMER, startRollupBuilder } from "../src/workers/rollup-builder.ts";

const T0 = Date.UTC(2026, 0, 1);
const MESSAGES = 12;
const ACK_WAIT_MS = 1_000;

test("MT-07 MT-10 a redelivery behind newer messages: the builder reads the gap from the stream in order, nothing lost or doubled", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "metrics-rollup-gap-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const client = new InProcessStreamServer().connect();
  const stream = new SampleStream(client, { partitions: 1, retentionMs: 3_600_000, maxBytes: 16 << 20 });
  await stream.ensure();
  const labels = labelsFromRecord({ __name__: "gap", host: "h0" });
  const samples = Array.from({ length: MESSAGES * 5 }, (_, i) => ({ t: T0 + i * 15_000, v: i }));
  for (let i = 0; i < MESSAGES; i++) {
    await stream.publish("acme", [{ labels, samples: samples.slice(5 * i, 5 * i + 5) }]);
  }
  const config = {
    name: ROLLUP_BUILDER_CONSUMER,
    filterSubject: `${SAMPLE_SUBJECT_PREFIX}.>`,
    deliver: { from: "all" as const },
    ackWaitMs: ACK_WAIT_MS,
    maxDeliver: 1_000,
    maxAckPending: 4,
  };
  await client.ensureConsumer(SAMPLE_STREAM, config);
  const taken = await client.fetch(SAMPLE_STREAM, ROLLUP_BUILDER_CONSUMER, {
    maxMessages: 4,
    expiresMs: 100,
  });
  assert.deepEqual(
    taken.map((m) => m.seq),
    [1, 2, 3, 4],
  );
  await taken[2]!.ack();
  await taken[3]!.ack();

  const store = await RollupStore.open({ dir, latenessMs: 60_000 });
  t.after(() => store.close());
  const reports: Array<{ seq: number; applied: boolean; late: number }> = [];
  const errors: unknown[] = [];
  const builder = await startRollupBuilder({
    client,
    store,
    ackWaitMs: ACK_WAIT_MS,
    expiresMs: 100,
    maxBatchMessages: 4,
    closeIntervalMs: 3_600_000,
    onApplied: ({ seq, applied, late }) => reports.push({ seq, applied, late }),
    onError: (error) => errors.push(error),
  });
  t.after(() => builder.stop());
  await eventually(
    async () => {
      const state = await client.consumerState(SAMPLE_STREAM, ROLLUP_BUILDER_CONSUMER);
      return (await store.appliedSeq()) === MESSAGES && state.pending === 0 && state.ackPending === 0;
    },
    { what: "every message applied and acked", timeoutMs: 20_000, intervalMs: 50 },
  );
  assert.deepEqual(errors, []);
  assert.equal(reports[0]!.seq, 5, "the builder got newer messages first");
  assert.deepEqual(
    reports.filter((r) => r.seq <= 2).map((r) => [r.seq, r.applied]),
    [
      [1, false],
      [2, false],
    ],
    "the redeliveries came back and were recognised: the gap read applied them",
  );
  assert.ok(
    reports.every((r) => r.late === 0),
    "applied in stream order: no sample fell behind its watermark",
  );
  const minutes = await store.select(
    "acme",
    "1m",
    [labelMatcher("=", "__name__", "gap")],
    0,
    Number.MAX_SAFE_INTEGER,
  );
  assert.equal(minutes.length, 1);
  assert.deepEqual(minutes[0]!.points, rollupPoints(samples, ONE_MINUTE_MS), "every sample counted once");
});

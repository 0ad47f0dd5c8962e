/**
 * MT-07/10: the rollup builder under a real crash, on a private nats-server (JetStream, file
 * storage): every batch is on the stream before the builder starts; the builder — a child
 * process applying 8 messages per DuckDB commit — is SIGKILLed twice right after a commit and
 * before its acks (in the middle of reporting the batch's messages), then runs to the end. From the stream's acknowledgements and the seq committed with the rollups,
 * every sample is counted once in the 1 min tier: the message each kill left unacked came back
 * and was recognised as applied, and DuckDB's own log kept every commit through the kill.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { openJetStream } from "@casebook/infra/stream/jetstream-stream";
import { eventually } from "@casebook/lab/eventually";
import { spawnChild } from "@casebook/lab/spawn-child";
import { spawnNats } from "@casebook/lab/spawn-nats";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { ONE_MINUTE_MS, rollupPoints } from "../src/domain/rollup.ts";
import { RollupStore } from "../src/store/rollup-store.ts";
import { SAMPLE_STREAM, SampleStream } from "../src/store/sample-stream.ts";
import { ROLLUP_BUILDER_CONSUMER } from "../src/workers/rollup-builder.ts";

const CHILD = new URL("./stream-rollup-builder-kill-child.ts", import.meta.url);
const SERIES = 20;
const BATCHES = 40;
const T0 = Date.UTC(2026, 0, 1);

async function runBuilder(url: string, dir: string, t: TestContext, killAfter?: number) {
  const args = killAfter === undefined ? [url, dir] : [url, dir, String(killAfter)];
  const committed: Array<{ seq: number; applied: boolean }> = [];
  // A listener from the first line: the builder may commit before (or in the same chunk as) its
  // "ready", and a listener added after the ready wait would miss those lines.
  const child = await spawnChild(CHILD, {
    args,
    ready: "ready",
    test: t,
    onLine: (line) => {
      const [word, seq, how] = line.split(" ");
      if (word === "committed") committed.push({ seq: Number(seq), applied: how === "applied" });
    },
  });
  return { child, committed };
}

test("MT-07 MT-10 the rollup builder SIGKILLed between its commit and its ack doubles nothing", async (t) => {
  const nats = await spawnNats();
  const dir = await mkdtemp(join(tmpdir(), "metrics-rollup-kill-"));
  t.after(async () => {
    await Promise.allSettled([nats.stop(), rm(dir, { recursive: true, force: true })]);
  });
  const client = await openJetStream({ url: nats.url, name: "rollup-kill-test", requestTimeoutMs: 5_000 });
  t.after(() => client.close().catch(() => undefined));
  const stream = new SampleStream(client, { partitions: 2, retentionMs: 3_600_000, maxBytes: 64 << 20 });
  await stream.ensure();
  const all = Array.from({ length: SERIES }, (_, s) => ({
    labels: labelsFromRecord({ __name__: "written", series: String(s) }),
    samples: Array.from({ length: 3 * BATCHES }, (_, i) => ({ t: T0 + i * 15_000, v: s * 1_000 + i })),
  }));
  for (let i = 0; i < BATCHES; i++) {
    await stream.publish(
      "acme",
      all.map((series) => ({ labels: series.labels, samples: series.samples.slice(3 * i, 3 * i + 3) })),
    );
  }

  const unacked: number[] = [];
  const later: Array<{ seq: number; applied: boolean }> = [];
  for (const killAfter of [13, 21]) {
    const run = await runBuilder(nats.url, dir, t, killAfter);
    const { signal } = await run.child.exited;
    assert.equal(signal, "SIGKILL", "the builder died where it was told to");
    assert.equal(run.committed.length, killAfter);
    later.push(...run.committed);
    unacked.push(run.committed.at(-1)!.seq);
  }
  const last = await runBuilder(nats.url, dir, t);
  await eventually(
    async () => {
      const state = await client.consumerState(SAMPLE_STREAM, ROLLUP_BUILDER_CONSUMER);
      return state.pending === 0 && state.ackPending === 0;
    },
    { what: "the builder to ack every message", timeoutMs: 60_000, intervalMs: 100 },
  );
  await last.child.stop();
  later.push(...last.committed);
  for (const seq of unacked) {
    assert.deepEqual(
      later.filter((c) => c.seq === seq).map((c) => c.applied),
      [true, false],
      `message ${seq}: applied before the kill, recognised after it`,
    );
  }
  const appliedSeqs = later.filter((c) => c.applied).map((c) => c.seq);
  assert.equal(new Set(appliedSeqs).size, appliedSeqs.length, "no message applied twice");
  // The rest of a killed batch was committed but never reported applied: it came back and
  // was recognised (skipped), as the reported one was; every other message applied once.
  const lastSeq = (await client.streamState(SAMPLE_STREAM)).lastSeq;
  const unreported = Array.from({ length: lastSeq }, (_, i) => i + 1).filter(
    (seq) => !appliedSeqs.includes(seq),
  );
  for (const seq of unreported) {
    assert.ok(
      unacked.some((killed) => seq > killed && seq < killed + 8),
      `message ${seq}: in a batch a kill left unacked (of at most 8)`,
    );
    assert.ok(
      later.some((c) => c.seq === seq && !c.applied),
      `message ${seq}: committed with its batch, recognised after the kill`,
    );
  }

  const store = await RollupStore.open({ dir, latenessMs: 300_000 });
  t.after(() => store.close());
  const minutes = await store.select(
    "acme",
    "1m",
    [labelMatcher("=", "__name__", "written")],
    0,
    Number.MAX_SAFE_INTEGER,
  );
  assert.equal(minutes.length, SERIES);
  for (const series of minutes) {
    const s = Number(series.labels.find(([n]) => n === "series")![1]);
    assert.deepEqual(
      series.points,
      rollupPoints(all[s]!.samples, ONE_MINUTE_MS),
      "every sample counted once",
    );
  }
});

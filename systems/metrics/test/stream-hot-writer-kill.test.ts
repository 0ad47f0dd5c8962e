/**
 * MT-07's hot writer under a real crash, on a private nats-server (JetStream, file storage):
 * every batch is on the stream before the writer starts; the writer — a child process — is
 * SIGKILLed twice right after appending a message and before acking it, then runs to the end.
 * From the stream's acknowledgements alone every sample is in the TSDB once: nothing lost,
 * nothing doubled, each series in order — and the message the crash left unacked was
 * delivered again (its redelivery is what the writer recognised as already stored).
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
import { SAMPLE_STREAM, SampleStream } from "../src/store/sample-stream.ts";
import { Tsdb } from "../src/store/tsdb.ts";
import { HOT_WRITER_CONSUMER } from "../src/workers/hot-writer.ts";

const CHILD = new URL("./stream-hot-writer-kill-child.ts", import.meta.url);
const PARTITIONS = 2;
const SERIES = 40;
const BATCHES = 50;
const T0 = Date.UTC(2026, 0, 1);

const dropped: string[] = [];

async function runWriter(url: string, dir: string, t: TestContext, killAfter?: number) {
  const args = killAfter === undefined ? [url, dir] : [url, dir, String(killAfter)];
  const applied: number[] = [];
  // A listener from the first line: the writer may apply messages before (or in the same
  // chunk as) its "ready", and a listener added after the ready wait would miss those lines.
  const child = await spawnChild(CHILD, {
    args,
    ready: "ready",
    test: t,
    env: { ...process.env, PARTITIONS: String(PARTITIONS) },
    onLine: (line) => {
      if (line.startsWith("applied ")) applied.push(Number(line.slice(8)));
      if (line.startsWith("dropped ")) dropped.push(line);
    },
  });
  return { child, applied };
}

test("MT-07 the hot writer killed between append and ack loses nothing and doubles nothing", async (t) => {
  const nats = await spawnNats();
  const dir = await mkdtemp(join(tmpdir(), "metrics-hot-writer-kill-"));
  t.after(async () => {
    await Promise.allSettled([nats.stop(), rm(dir, { recursive: true, force: true })]);
  });
  const client = await openJetStream({ url: nats.url, name: "kill-test", requestTimeoutMs: 5_000 });
  t.after(() => client.close().catch(() => undefined));
  const stream = new SampleStream(client, {
    partitions: PARTITIONS,
    retentionMs: 3_600_000,
    maxBytes: 64 * 1024 * 1024,
  });
  await stream.ensure();
  for (let i = 0; i < BATCHES; i++) {
    const batch = Array.from({ length: SERIES }, (_, s) => ({
      labels: labelsFromRecord({ __name__: "written", series: String(s) }),
      // Several samples per series in a message: a redelivery is older than the series' newest.
      samples: [0, 1, 2].map((k) => ({ t: T0 + (3 * i + k) * 15_000, v: 3 * i + k })),
    }));
    await stream.publish("acme", batch);
  }

  const unacked: number[] = [];
  const appliedLater: number[] = [];
  for (const killAfter of [17, 23]) {
    const run = await runWriter(nats.url, dir, t, killAfter);
    const { signal } = await run.child.exited;
    assert.equal(signal, "SIGKILL", "the writer died where it was told to");
    assert.equal(run.applied.length, killAfter);
    appliedLater.push(...run.applied);
    unacked.push(run.applied.at(-1)!);
  }
  const last = await runWriter(nats.url, dir, t);
  await eventually(
    async () => {
      for (let p = 0; p < PARTITIONS; p++) {
        const state = await client.consumerState(SAMPLE_STREAM, `${HOT_WRITER_CONSUMER}-p${p}`);
        if (state.pending > 0 || state.ackPending > 0) return false;
      }
      return true;
    },
    { what: "the hot writer to ack every message", timeoutMs: 60_000, intervalMs: 100 },
  );
  await last.child.stop();
  appliedLater.push(...last.applied);
  assert.deepEqual(dropped, [], "no message was refused by the TSDB");
  // Each message a kill left unacked was applied twice: by the run that died, and again after
  // its redelivery (where its samples were recognised as stored).
  for (const seq of unacked) {
    assert.equal(appliedLater.filter((s) => s === seq).length, 2, `message ${seq} came back once`);
  }

  const db = await Tsdb.open({
    dir: join(dir, "acme"),
    blockRangeMs: 7_200_000,
    limits: { maxSeries: 10_000, maxSeriesPerMetric: 10_000 },
  });
  t.after(() => db.close());
  const series = db.select([labelMatcher("=", "__name__", "written")], 0, Number.MAX_SAFE_INTEGER);
  assert.equal(series.length, SERIES);
  const expected = Array.from({ length: 3 * BATCHES }, (_, i) => i);
  for (const s of series) {
    assert.deepEqual(Array.from(s.values), expected, "every sample once, in order");
    assert.deepEqual(
      s.timestamps,
      expected.map((i) => T0 + i * 15_000),
    );
  }
});

/**
 * MT-07's hot writer under a real crash, on a private nats-server (JetStream, file storage):
 * every batch is on the stream before the writer starts; the writer — a child process — is
 * SIGKILLed twice, then runs to the end. From the stream's acknowledgements alone every sample
 * is in the TSDB once: nothing lost, nothing doubled, each series in order.
 *
 * - Between a message's append and its ack (the first test): the message the crash left
 *   unacked was delivered again (its redelivery is what the writer recognised as stored).
 * - In batches (the second): killed after a batch's WAL fsync and before its acks, the whole
 *   batch comes back and is recognised as stored; killed after taking a batch and before
 *   applying any of it, while the next writer — allowed more unacked messages — is handed newer
 *   messages at once, those wait until the dead batch is back and go after it in seq order.
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
/** Error codes the writers reported (onError), over every run of a test. */
const reported: string[] = [];

/**
 * A crash may cost a round (a redelivery, a wait); a fetch the stream refused for its own
 * options is the writer's bug — a wait cut to the hold's deadline was once a fraction of a ms.
 */
function assertNoRefusedFetch(): void {
  assert.deepEqual(
    reported.filter((code) => code === "STREAM_CONFIG_INVALID"),
    [],
    "a fetch refused for its options",
  );
}

async function runWriter(
  url: string,
  dir: string,
  t: TestContext,
  killAfter?: number,
  env: Record<string, string> = {},
) {
  const args = killAfter === undefined ? [url, dir] : [url, dir, String(killAfter)];
  const applied: number[] = [];
  const fetched: number[][] = [];
  const durable: number[][] = [];
  // A listener from the first line: the writer may apply messages before (or in the same
  // chunk as) its "ready", and a listener added after the ready wait would miss those lines.
  const child = await spawnChild(CHILD, {
    args,
    ready: "ready",
    test: t,
    env: { ...process.env, PARTITIONS: String(PARTITIONS), ...env },
    onLine: (line) => {
      if (line.startsWith("applied ")) applied.push(Number(line.slice(8)));
      if (line.startsWith("fetched ")) fetched.push(line.slice(8).split(",").map(Number));
      if (line.startsWith("durable ")) durable.push(line.slice(8).split(",").map(Number));
      if (line.startsWith("dropped ")) dropped.push(line);
      if (line.startsWith("error ")) reported.push(line.slice(6));
    },
  });
  return { child, applied, fetched, durable };
}

/** A private nats-server with every batch published, and a TSDB directory. */
async function publishedStream(t: TestContext) {
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
  return { nats, dir, client };
}

/** Runs a writer to the end, then checks every sample is stored once, in order. */
async function finishAndCheck(
  t: TestContext,
  setup: Awaited<ReturnType<typeof publishedStream>>,
  env: Record<string, string> = {},
) {
  const { nats, dir, client } = setup;
  const last = await runWriter(nats.url, dir, t, undefined, env);
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
  assert.deepEqual(dropped, [], "no message was refused by the TSDB");
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
  return last;
}

test("MT-07 the hot writer killed between append and ack loses nothing and doubles nothing", async (t) => {
  const setup = await publishedStream(t);
  const { nats, dir } = setup;
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
  const last = await finishAndCheck(t, setup);
  appliedLater.push(...last.applied);
  // Each message a kill left unacked was applied again after its redelivery (where its samples
  // were recognised as stored) — more than twice when the next run died with it unacked too
  // (a batch of many is in flight): the TSDB above holds its samples once all the same.
  for (const seq of unacked) {
    assert.ok(appliedLater.filter((s) => s === seq).length >= 2, `message ${seq} came back`);
  }
  assertNoRefusedFetch();
});

test("MT-07 the hot writer in batches killed after the WAL fsync, before the acks, or before applying, loses nothing and doubles nothing", async (t) => {
  const setup = await publishedStream(t);
  const { nats, dir } = setup;
  dropped.length = 0;
  // Killed after its third batch's fsync, before any of that batch's acks.
  const first = await runWriter(nats.url, dir, t, 3, { BATCH: "8", KILL_AT: "durable" });
  assert.equal((await first.child.exited).signal, "SIGKILL");
  assert.equal(first.durable.length, 3);
  const durableUnacked = first.durable[2]!;
  assert.ok(durableUnacked.length > 1, `a batch of several messages (${durableUnacked.length})`);
  // Killed once it took its first batch of first deliveries (after the first run's batches came
  // back and were recognised as stored), nothing of it applied.
  // Its ack wait is long: the batch it dies with is not due again when the last writer starts.
  const second = await runWriter(nats.url, dir, t, 1, { BATCH: "8", KILL_AT: "fresh", ACK_WAIT_MS: "15000" });
  assert.equal((await second.child.exited).signal, "SIGKILL");
  const takenUnapplied = second.fetched.at(-1)!;
  for (const seq of takenUnapplied) assert.ok(!second.applied.includes(seq), `${seq} was not applied`);
  // Allowed 16 unacked, and with an ack wait longer than its own start, the last writer is
  // handed 8 newer messages at once beside the 8 the dead one took (not due yet): it holds them
  // until the dead batch is back, then applies all in seq order — applied first, the newer ones
  // would leave the dead batch's samples older than each series' newest, skipped as stored.
  const last = await finishAndCheck(t, setup, { BATCH: "16", ACK_WAIT_MS: "15000" });
  const appliedAll = [...first.applied, ...second.applied, ...last.applied];
  const times = (list: readonly number[], seq: number) => list.filter((s) => s === seq).length;
  for (const seq of durableUnacked) {
    assert.ok(times(appliedAll, seq) >= 2, `message ${seq} came back after the fsync`);
  }
  for (const seq of takenUnapplied) {
    const before = times(first.applied, seq); // a redelivery of the first run's batch, or 0
    assert.equal(times(appliedAll, seq), before + 1, `message ${seq} applied after its redelivery`);
  }
  assertNoRefusedFetch();
});

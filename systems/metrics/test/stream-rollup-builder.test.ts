/**
 * The rollup builder — the stream's third consumer (MT-07) — on the in-process log and on a
 * private nats-server: it builds the 1 min tier from the raw samples on the stream and the
 * 1 h tier (Parquet, read back with SQL) from the 1 min tier (MT-10), keeping min, max, sum and
 * count so a 1 s spike is the 1 h point's max (MT-11), and each window's first/last sample and
 * reset carry (what `rate` over the tiers reads); windows close on the watermark (newest
 * sample − lateness), later samples are counted and left out; a builder that dies between its
 * commit and its ack, and a restarted one, double nothing.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { InProcessStreamServer } from "@casebook/infra/stream/in-process-stream";
import { openJetStream } from "@casebook/infra/stream/jetstream-stream";
import type { StreamClient } from "@casebook/infra/stream/stream";
import { eventually } from "@casebook/lab/eventually";
import { spawnNats } from "@casebook/lab/spawn-nats";
import type { SeriesSamples } from "../src/domain/head-block.ts";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { ONE_HOUR_MS, ONE_MINUTE_MS, type RollupPoint, rollupPoints } from "../src/domain/rollup.ts";
import { RollupStore } from "../src/store/rollup-store.ts";
import { SAMPLE_STREAM, SampleStream } from "../src/store/sample-stream.ts";
import {
  ROLLUP_BUILDER_CONSUMER,
  type RollupBuilder,
  startRollupBuilder,
} from "../src/workers/rollup-builder.ts";

const T0 = Date.UTC(2026, 0, 1);
const STEP_MS = 10_000;
const LATENESS_MS = 5 * ONE_MINUTE_MS;
const SERIES = 3;
/** 2.5 h of 10 s samples, published in 3-minute batches. */
const SAMPLES_PER_SERIES = (2.5 * ONE_HOUR_MS) / STEP_MS;
const PER_BATCH = 18;
const SPIKE_T = T0 + 37 * ONE_MINUTE_MS + 10_000;
const SPIKE = 1e6;

function sampleValue(series: number, t: number): number {
  if (series === 0 && t === SPIKE_T) return SPIKE; // one 10 s spike in a gentle wave
  return 10 * series + Math.sin(t / 600_000) + ((t / STEP_MS) % 7) / 10;
}

function generated(): SeriesSamples[] {
  return Array.from({ length: SERIES }, (_, s) => ({
    labels: labelsFromRecord({ __name__: "cpu", host: `h${s}` }),
    samples: Array.from({ length: SAMPLES_PER_SERIES }, (_, i) => {
      const t = T0 + i * STEP_MS;
      return { t, v: sampleValue(s, t) };
    }),
  }));
}

async function publishAll(stream: SampleStream, all: SeriesSamples[]): Promise<void> {
  for (let i = 0; i < SAMPLES_PER_SERIES; i += PER_BATCH) {
    await stream.publish(
      "acme",
      all.map((s) => ({ labels: s.labels, samples: s.samples.slice(i, i + PER_BATCH) })),
    );
  }
}

interface Backend {
  name: string;
  open(t: TestContext): Promise<() => Promise<StreamClient>>;
}

const backends: Backend[] = [
  {
    name: "in-process log",
    async open() {
      const server = new InProcessStreamServer();
      return async () => server.connect();
    },
  },
  {
    name: "NATS JetStream (private nats-server)",
    async open(t) {
      const nats = await spawnNats();
      t.after(() => nats.stop());
      return async () => {
        const client = await openJetStream({ url: nats.url, name: "rollup-test", requestTimeoutMs: 5_000 });
        t.after(() => client.close().catch(() => undefined));
        return client;
      };
    },
  },
];

for (const backend of backends) {
  test(`MT-10 MT-11 MT-07 the rollup builder on the ${backend.name}: 1 min from raw, 1 h from 1 min in Parquet, a crash between commit and ack and a restart double nothing`, async (t) => {
    const connect = await backend.open(t);
    const dir = await mkdtemp(join(tmpdir(), "metrics-rollup-builder-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const client = await connect();
    const stream = new SampleStream(client, { partitions: 4, retentionMs: 3_600_000, maxBytes: 64 << 20 });
    await stream.ensure();
    const all = generated();
    await publishAll(stream, all);
    const lastSeq = (await client.streamState(SAMPLE_STREAM)).lastSeq;

    const store = await RollupStore.open({ dir, latenessMs: LATENESS_MS });
    t.after(() => store.close());
    const errors: unknown[] = [];
    const applied: number[] = [];
    const skipped: number[] = [];
    const crashed = Math.floor(lastSeq / 3);
    let crashAt = crashed;
    const start = (c: StreamClient) =>
      startRollupBuilder({
        client: c,
        store,
        ackWaitMs: 500,
        closeIntervalMs: 60_000,
        onApplied: (e) => (e.applied ? applied : skipped).push(e.seq),
        afterCommit: (seq) => {
          if (seq === crashAt) {
            crashAt = -1;
            throw new Error("crash between the commit and the ack"); // the message comes back
          }
        },
        onError: (error) => errors.push(error),
      });
    // First run: dies (stops) half way through; the second run, on a new connection, resumes.
    let builder: RollupBuilder = await start(client);
    await eventually(async () => (await store.appliedSeq()) >= Math.floor(lastSeq / 2), {
      what: "half the stream applied",
      timeoutMs: 30_000,
    });
    await builder.stop();
    builder = await start(await connect());
    t.after(() => builder.stop());
    // Applied in batches: the crashed message's redelivery may come after the last commit.
    await eventually(
      async () => {
        const state = await client.consumerState(SAMPLE_STREAM, ROLLUP_BUILDER_CONSUMER);
        return (await store.appliedSeq()) === lastSeq && state.pending === 0 && state.ackPending === 0;
      },
      { what: "the whole stream applied and acked", timeoutMs: 30_000 },
    );
    assert.equal(errors.length, 1, "the one simulated crash");
    assert.ok(skipped.includes(crashed), "the crashed message came back and was skipped");
    assert.ok(!applied.includes(crashed), "… not applied again");
    assert.deepEqual(
      [...new Set(applied)].sort((a, b) => a - b),
      applied.toSorted((a, b) => a - b),
      "no message applied twice",
    );
    assert.equal(
      applied.length + 1,
      lastSeq,
      "every other message applied once (the crashed one by its commit)",
    );

    // 1 min tier = the raw samples rolled up per minute, every window (even the open ones).
    const h0 = [labelMatcher("=", "__name__", "cpu"), labelMatcher("=", "host", "h0")];
    const minutes = await store.select("acme", "1m", h0, T0, T0 + 3 * ONE_HOUR_MS);
    assert.equal(minutes.length, 1);
    assert.deepEqual(minutes[0]!.points, rollupPoints(all[0]!.samples, ONE_MINUTE_MS));
    assert.equal(minutes[0]!.points.length, 150);
    assert.ok(minutes[0]!.points.every((p) => p.count === 6));
    await assert.rejects(
      store.select("acme", "1m", h0, T0, T0 + 3 * ONE_HOUR_MS, 149),
      RangeError,
      "a read is bounded",
    );

    // 1 h tier: only hours the watermark closed (newest 2:29:50 − 5 min → hours 0 and 1).
    await builder.closeHours(); // the closer loop may have written hour 0 already (it runs at start)
    assert.deepEqual(await readdir(join(dir, "hour", "acme")), ["2026-01-01.parquet"]);
    const hours = await store.select(
      "acme",
      "1h",
      [labelMatcher("=~", "__name__", "cpu")],
      T0,
      T0 + ONE_HOUR_MS * 3,
    );
    assert.equal(hours.length, SERIES);
    const hour0 = hours.find((s) => s.labels.some(([n, v]) => n === "host" && v === "h0"))!;
    const closed = all[0]!.samples.filter((s) => s.t < T0 + 2 * ONE_HOUR_MS);
    assertSamePoints(hour0.points, rollupPoints(closed, ONE_HOUR_MS), "1 h from 1 min = 1 h from raw");
    assert.equal(hour0.points[0]!.max, SPIKE, "MT-11: the 10 s spike is the first hour's max");
    assert.equal(hour0.points[0]!.count, 360);
    assert.equal(await builder.closeHours(), 0, "an hour is written once");

    // Late samples (older than the watermark) stay out; fresh ones move it and close hour 2.
    const late: ApplyCheck = { labels: all[1]!.labels, t: T0 + 10 * ONE_MINUTE_MS };
    const fresh = T0 + 3 * ONE_HOUR_MS + 6 * ONE_MINUTE_MS;
    await stream.publish("acme", [
      { labels: late.labels, samples: [{ t: late.t + 1, v: 999 }] },
      ...all.map((series) => ({ labels: series.labels, samples: [{ t: fresh, v: 1 }] })),
    ]);
    await eventually(async () => (await store.watermark("acme")) === fresh - LATENESS_MS, {
      what: "the watermark moved",
      timeoutMs: 10_000,
    });
    const h1minute = await store.select(
      "acme",
      "1m",
      [labelMatcher("=", "host", "h1")],
      late.t,
      late.t + ONE_MINUTE_MS - 1,
    );
    assert.equal(h1minute[0]!.points[0]!.count, 6, "the late sample is not in its closed minute");
    assert.equal(await builder.closeHours(), 1, "hour 2 closed by the watermark");
    const after = await store.select("acme", "1h", h0, T0, T0 + ONE_HOUR_MS * 3);
    assertSamePoints(after[0]!.points, rollupPoints(all[0]!.samples, ONE_HOUR_MS), "hours 0–2");
  });
}

/**
 * min, max, count and the first/last samples exactly; sum and the reset carry within float
 * rounding (SQL's sum adds in its own order).
 */
function assertSamePoints(actual: readonly RollupPoint[], expected: readonly RollupPoint[], what: string) {
  const exact = ({ t, min, max, count, counter }: RollupPoint) => ({
    t,
    min,
    max,
    count,
    first: [counter?.firstT, counter?.firstV],
    last: [counter?.lastT, counter?.lastV],
  });
  assert.deepEqual(actual.map(exact), expected.map(exact), what);
  const close = (got: number, want: number, name: string) =>
    assert.ok(Math.abs(got - want) <= 1e-12 * Math.abs(want), `${what}: ${name} ${got} vs ${want}`);
  actual.forEach((p, i) => {
    close(p.sum, expected[i]!.sum, "sum");
    close(p.counter!.resetCarry, expected[i]!.counter!.resetCarry, "reset carry");
  });
}

interface ApplyCheck {
  labels: SeriesSamples["labels"];
  t: number;
}

test("the rollup builder lingers after a fetch that was not full: a trickle of messages commits in few DuckDB transactions, not one each", async (t) => {
  const transactionsFor = async (lingerMs: number) => {
    const dir = await mkdtemp(join(tmpdir(), "metrics-rollup-linger-"));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const client = await new InProcessStreamServer().connect();
    const stream = new SampleStream(client, { partitions: 1, retentionMs: 3_600_000, maxBytes: 64 << 20 });
    await stream.ensure();
    const store = await RollupStore.open({ dir, latenessMs: LATENESS_MS });
    t.after(() => store.close());
    let transactions = 0;
    const applyBatch = store.applyBatch.bind(store);
    store.applyBatch = (...args) => {
      transactions++;
      return applyBatch(...args);
    };
    const errors: unknown[] = [];
    const builder = await startRollupBuilder({
      client,
      store,
      lingerMs,
      closeIntervalMs: 60_000,
      onError: (error) => errors.push(error),
    });
    t.after(() => builder.stop());
    // Eight messages 40 ms apart (~320 ms), each one series' next minute.
    const labels = labelsFromRecord({ __name__: "cpu", host: "h0" });
    for (let i = 0; i < 8; i++) {
      await stream.publish("acme", [{ labels, samples: [{ t: T0 + i * ONE_MINUTE_MS, v: i }] }]);
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    const lastSeq = (await client.streamState(SAMPLE_STREAM)).lastSeq;
    await eventually(async () => (await store.appliedSeq()) >= lastSeq, { what: "every message applied" });
    await builder.stop();
    assert.deepEqual(errors, []);
    return transactions;
  };
  const lingering = await transactionsFor(1_000);
  const eager = await transactionsFor(1);
  assert.ok(lingering <= 2, `with a 1 s linger: ${lingering} transactions for 8 messages over ~320 ms`);
  assert.ok(eager >= 4, `with none: ${eager} transactions (the trickle is what the linger gathers)`);
});

/**
 * The rollup tiers' counter fields (first/last sample, reset carry: `rate`/`increase` over the
 * tiers) in the store (MT-10/11/12): a minute split across stream messages — a counter reset
 * at the split — is two partial rows, read merged and, once the watermark closes the minute,
 * merged into one row, each time the rollup of its raw samples; and the upgrade path — a 1 min
 * table (keyed, one row per minute) and a 1 h Parquet day file written before the fields
 * existed (the previous schema, made here by hand) still read, their windows without the
 * fields, while new windows get them and a day file rewritten as a later hour closes keeps its
 * old hours. And a batch of more rows than one appended data chunk holds, stored whole.
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuckDBInstance } from "@duckdb/node-api";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import { labelsFromRecord, seriesKey } from "../src/domain/labels.ts";
import { PromqlEngine } from "../src/domain/promql-engine.ts";
import { parsePromql } from "../src/domain/promql-parser.ts";
import { rewriteForRollup, rollupSeriesData, rollupView } from "../src/domain/promql-rollup.ts";
import { ONE_HOUR_MS, ONE_MINUTE_MS, rollupPoints } from "../src/domain/rollup.ts";
import { RollupStore, rollupMessageOf } from "../src/store/rollup-store.ts";

const T0 = Date.UTC(2026, 0, 1);
const labels = labelsFromRecord({ __name__: "requests_total", host: "a" });
const matchers = [labelMatcher("=", "__name__", "requests_total")];

/** A counter every 10 s from `from` (7 s off the minute), reset to 2 at the given times. */
function counter(from: number, count: number, resets: readonly number[] = []) {
  let v = 500;
  return Array.from({ length: count }, (_, i) => {
    const t = from + 7_000 + i * 10_000;
    v = resets.includes(t) ? 2 : v + 3 + (i % 5);
    return { t, v };
  });
}

test("MT-10 MT-11 a minute split across stream messages, a counter reset at the split: its two partial rows read as the rollup of its raw samples (first/last and reset carry included)", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-rollup-split-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const store = await RollupStore.open({ dir, latenessMs: ONE_HOUR_MS });
  t.after(() => store.close());
  // 00:00:07 … 00:09:57; the second message starts at 00:02:37 with a reset (and one inside).
  const samples = counter(T0, 60, [T0 + 157_000, T0 + 337_000]);
  const cut = samples.findIndex((s) => s.t === T0 + 157_000);
  for (const [seq, part] of [samples.slice(0, cut), samples.slice(cut)].entries()) {
    await store.apply(
      rollupMessageOf({ seq: seq + 1, tenant: "acme", partition: 0, series: [{ labels, samples: part }] }),
    );
  }
  const [read] = await store.select("acme", "1m", matchers, T0, T0 + ONE_HOUR_MS);
  assert.deepEqual(read!.points, rollupPoints(samples, ONE_MINUTE_MS));
  assert.equal(
    read!.points[2]!.counter!.resetCarry,
    samples[cut - 1]!.v,
    "the split minute carries the reset",
  );
});

/** The rows of the 1 min table (the store closed: DuckDB locks its file). */
async function minuteRows(dir: string): Promise<number> {
  const instance = await DuckDBInstance.create(join(dir, "rollups.duckdb"));
  const db = await instance.connect();
  const rows = (await db.runAndReadAll("SELECT count(*)::INTEGER AS n FROM minute")).getRowObjects();
  db.closeSync();
  instance.closeSync();
  return Number(rows[0]!.n);
}

test("MT-10 MT-11 a minute's partial rows are merged into one row once the watermark has closed it: the same points read before and after, the rollup of the raw samples, a reset at the split carried", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-rollup-compact-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  let store = await RollupStore.open({ dir, latenessMs: ONE_MINUTE_MS });
  // 00:00:07 … 00:09:57 in two messages, the second from 00:02:37 (a reset there): minute 2 in both.
  const samples = counter(T0, 60, [T0 + 157_000]);
  const cut = samples.findIndex((s) => s.t === T0 + 157_000);
  for (const [seq, part] of [samples.slice(0, cut), samples.slice(cut)].entries()) {
    await store.apply(
      rollupMessageOf({ seq: seq + 1, tenant: "acme", partition: 0, series: [{ labels, samples: part }] }),
    );
  }
  const whole = rollupPoints(samples, ONE_MINUTE_MS);
  const read = async () => (await store.select("acme", "1m", matchers, T0, T0 + ONE_HOUR_MS))[0]!.points;
  assert.deepEqual(await read(), whole, "read merged before the compaction");
  // The watermark: 00:09:57 − 1 min — minutes 0–7 closed, minute 2 the only one in two rows.
  assert.equal(await store.compactMinutes(), 1);
  assert.deepEqual(await read(), whole, "the same after it");
  assert.ok(whole[2]!.counter!.resetCarry > 0, "the split minute carries the reset");
  assert.equal(await store.compactMinutes(), 0, "nothing left to merge");
  await store.close();
  assert.equal(await minuteRows(dir), 10, "one row per minute");
  store = await RollupStore.open({ dir, latenessMs: ONE_MINUTE_MS });
  t.after(() => store.close());
  assert.deepEqual(await read(), whole, "and after a restart");
});

/** The 1 min table and a day file as the store wrote them before the counter fields. */
async function writeOldTiers(dir: string, minutes: ReturnType<typeof rollupPoints>, hourFile: string) {
  const instance = await DuckDBInstance.create(join(dir, "rollups.duckdb"));
  const db = await instance.connect();
  await db.run(`
    CREATE TABLE series (tenant VARCHAR, series VARCHAR, name VARCHAR, labels VARCHAR, PRIMARY KEY (tenant, series));
    CREATE TABLE minute (tenant VARCHAR, series VARCHAR, t BIGINT,
      min DOUBLE, max DOUBLE, sum DOUBLE, count BIGINT, PRIMARY KEY (tenant, series, t));
    CREATE TABLE builder_state (key VARCHAR PRIMARY KEY, value BIGINT);
    CREATE TABLE tenant_state (tenant VARCHAR PRIMARY KEY, max_t BIGINT, hours_closed_to BIGINT);
    CREATE TABLE partition_state (tenant VARCHAR, part INTEGER, max_t BIGINT, PRIMARY KEY (tenant, part));
  `);
  const key = seriesKey(labels);
  await db.run("INSERT INTO series VALUES ('acme', $1, 'requests_total', $2)", [key, JSON.stringify(labels)]);
  for (const p of minutes) {
    await db.run("INSERT INTO minute VALUES ('acme', $1, $2::BIGINT, $3, $4, $5, $6::BIGINT)", [
      key,
      p.t,
      p.min,
      p.max,
      p.sum,
      p.count,
    ]);
  }
  const newest = T0 + 2 * ONE_HOUR_MS - 3_000;
  await db.run(`INSERT INTO builder_state VALUES ('applied_seq', 1);
    INSERT INTO tenant_state VALUES ('acme', ${newest}, ${T0 + ONE_HOUR_MS});
    INSERT INTO partition_state VALUES ('acme', 0, ${newest});`);
  // Hour 0 as the old closer wrote it: no counter columns.
  await db.run(`COPY (SELECT m.series, s.name, s.labels, (m.t // ${ONE_HOUR_MS}) * ${ONE_HOUR_MS} AS t,
      min(m.min) AS min, max(m.max) AS max, sum(m.sum) AS sum, sum(m.count)::BIGINT AS count
    FROM minute m JOIN series s USING (tenant, series) WHERE m.t < ${T0 + ONE_HOUR_MS}
    GROUP BY ALL ORDER BY t) TO '${hourFile}' (FORMAT parquet)`);
  db.closeSync();
  instance.closeSync();
}

test("MT-12 MT-09 tiers written before the counter fields: old windows still answer min/max/sum/count and no rate, new windows answer rate as raw does, an old day file rewritten keeps its hours", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-rollup-upgrade-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  // Hours 0 and 1 under the old schema (hour 1's last minute still open at the upgrade), hour 0
  // closed to Parquet; then the new store takes hours 1 (its last minute) to 3.
  const samples = counter(T0, 4 * 360, [T0 + 2 * ONE_HOUR_MS + 20 * ONE_MINUTE_MS + 7_000]);
  const before = samples.filter((s) => s.t < T0 + 2 * ONE_HOUR_MS - 30_000);
  const after = samples.filter((s) => s.t >= T0 + 2 * ONE_HOUR_MS - 30_000);
  await mkdir(join(dir, "hour", "acme"), { recursive: true });
  await writeOldTiers(
    dir,
    rollupPoints(before, ONE_MINUTE_MS),
    join(dir, "hour", "acme", "2026-01-01.parquet"),
  );

  const store = await RollupStore.open({ dir, latenessMs: 5 * ONE_MINUTE_MS });
  t.after(() => store.close());
  const old = await store.select("acme", "1h", matchers, T0, T0 + 4 * ONE_HOUR_MS);
  const { counter: _none, ...hour0 } = rollupPoints(before, ONE_HOUR_MS)[0]!;
  assert.deepEqual(old[0]!.points, [hour0], "the old day file reads, without counter fields");
  await store.apply(
    rollupMessageOf({ seq: 2, tenant: "acme", partition: 0, series: [{ labels, samples: after }] }),
  );
  const minutes = (await store.select("acme", "1m", matchers, T0, T0 + 4 * ONE_HOUR_MS))[0]!.points;
  const fresh = rollupPoints(after, ONE_MINUTE_MS);
  assert.ok(
    minutes.slice(0, 119).every((p) => p.counter === undefined),
    "old rows: no counter fields",
  );
  assert.equal(minutes[119]!.t, T0 + 2 * ONE_HOUR_MS - ONE_MINUTE_MS);
  assert.equal(
    minutes[119]!.counter,
    undefined,
    "the minute open at the upgrade: its first samples were never seen",
  );
  assert.equal(minutes[119]!.count, 6, "… its count whole");
  assert.deepEqual(minutes.slice(120), fresh.slice(1), "new minutes: the rollup of their samples");

  // Hours 1 and 2 close (watermark 3:59:57 − 5 min): the day file is rewritten, hour 0 kept.
  assert.equal(await store.closeHours(), 2);
  const hours = (await store.select("acme", "1h", matchers, T0, T0 + 4 * ONE_HOUR_MS))[0]!.points;
  assert.deepEqual(
    hours.map((p) => [p.t, p.count, p.counter !== undefined]),
    [
      [T0, 360, false],
      [T0 + ONE_HOUR_MS, 360, false],
      [T0 + 2 * ONE_HOUR_MS, 360, true],
    ],
    "hour 1 holds an old minute: no counter fields; hour 2 has them",
  );
  assert.deepEqual(hours[2]!.counter, rollupPoints(samples, ONE_HOUR_MS)[2]!.counter);

  // Through PromQL on the 1 h tier: increase over hour 2 as raw answers; over hours 1–2, none.
  const rollup = new PromqlEngine(
    { select: (m) => [rollupSeriesData({ labels, points: hours }, rollupView(m).view, ONE_HOUR_MS)] },
    { lookbackMs: ONE_HOUR_MS },
  );
  const raw = new PromqlEngine({
    select: () => [{ labels, timestamps: samples.map((s) => s.t), values: samples.map((s) => s.v) }],
  });
  const ask = (engine: PromqlEngine, q: string, rollupTier: boolean) => {
    const expr = parsePromql(q);
    const value = engine.instant(
      rollupTier ? rewriteForRollup(expr, "1h", ONE_HOUR_MS) : expr,
      T0 + 3 * ONE_HOUR_MS,
    );
    assert.ok(value.type === "vector");
    return value.samples.map((s) => s.v);
  };
  assert.deepEqual(
    ask(rollup, "increase(requests_total[1h])", true),
    ask(raw, "increase(requests_total[1h])", false),
  );
  assert.ok(ask(raw, "increase(requests_total[1h])", false)[0]! > 0);
  assert.deepEqual(
    ask(rollup, "increase(requests_total[2h])", true),
    [],
    "a range holding an old hour: no value",
  );
  assert.deepEqual(
    ask(rollup, "max_over_time(requests_total[2h])", true),
    ask(raw, "max_over_time(requests_total[2h])", false),
  );
});

test("MT-10 MT-11 a 1 min row the tenant's state does not account for (written by hand, or before that state was kept) is merged with the batch's rows of its minute, not refused", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-rollup-stray-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const samples = counter(T0, 18); // 00:00:07 … 00:02:57
  let store = await RollupStore.open({ dir, latenessMs: ONE_HOUR_MS });
  await store.apply(
    rollupMessageOf({
      seq: 1,
      tenant: "acme",
      partition: 0,
      series: [{ labels, samples: samples.slice(0, 6) }],
    }),
  );
  await store.close();
  // Minute 2 holds a row already, although the tenant's newest sample is in minute 0.
  const stray = rollupPoints(samples.slice(12), ONE_MINUTE_MS)[0]!;
  const instance = await DuckDBInstance.create(join(dir, "rollups.duckdb"));
  const db = await instance.connect();
  await db.run(
    "INSERT INTO minute (tenant, series, t, min, max, sum, count) VALUES ('acme', $1, $2::BIGINT, $3, $4, $5, $6::BIGINT)",
    [seriesKey(labels), stray.t, stray.min, stray.max, stray.sum, stray.count],
  );
  db.closeSync();
  instance.closeSync();

  store = await RollupStore.open({ dir, latenessMs: ONE_HOUR_MS });
  t.after(() => store.close());
  const result = await store.apply(
    rollupMessageOf({
      seq: 2,
      tenant: "acme",
      partition: 0,
      series: [{ labels, samples: samples.slice(6) }],
    }),
  );
  assert.deepEqual(result, { applied: true, points: 2, late: 0 });
  const points = (await store.select("acme", "1m", matchers, T0, T0 + ONE_HOUR_MS))[0]!.points;
  const whole = rollupPoints(samples, ONE_MINUTE_MS);
  assert.deepEqual(points.slice(0, 2), whole.slice(0, 2), "minutes 0 and 1: the rollup of their samples");
  assert.equal(points[2]!.count, 2 * whole[2]!.count, "minute 2: the stray row plus the samples, merged");
  assert.equal(points[2]!.sum, 2 * whole[2]!.sum);
  assert.equal(points[2]!.counter, undefined, "the stray row had no counter fields: the merge has none");
  assert.equal(await store.appliedSeq(), 2);
});

test("MT-10 a batch of more 1 min rows than one appended data chunk holds (2,048): every minute of every series stored, each the rollup of its raw samples", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-rollup-chunks-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const store = await RollupStore.open({ dir, latenessMs: ONE_HOUR_MS });
  // 5 series × 9 h of a sample a minute, counters with a reset: 2,700 rows in one batch of 5
  // messages, each series on a partition of its own (a partition's watermark is its own).
  const hosts = ["a", "b", "c", "d", "e"];
  const minutes = 540;
  const series = hosts.map((host, h) => ({
    labels: labelsFromRecord({ __name__: "requests_total", host }),
    samples: Array.from({ length: minutes }, (_, i) => ({
      t: T0 + i * ONE_MINUTE_MS + 7_000,
      v: i === 300 + h ? 1 : 10 * i + h,
    })),
  }));
  await store.applyBatch(
    series.map((s, i) => rollupMessageOf({ seq: i + 1, tenant: "acme", partition: i, series: [s] })),
  );
  const read = await store.select("acme", "1m", matchers, T0, T0 + 10 * ONE_HOUR_MS);
  assert.equal(read.length, hosts.length);
  for (const s of series) {
    const found = read.find((r) => seriesKey(r.labels) === seriesKey(s.labels));
    assert.deepEqual(found?.points, rollupPoints(s.samples, ONE_MINUTE_MS), `host ${s.labels}`);
  }
  await store.close();
  assert.equal(await minuteRows(dir), hosts.length * minutes, "one row per series and minute");
});

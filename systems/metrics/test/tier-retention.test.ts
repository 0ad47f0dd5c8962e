/**
 * MT-09/18: the retention pyramid — raw 7 d, 1 min 30 d, 1 h 1 y by default — enforced by the
 * tier reaper (a BackgroundLoop) against a manual clock, on a real TSDB (blocks on disk), the
 * 1 min DuckDB table and the 1 h Parquet files.
 */
import assert from "node:assert/strict";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { eventually } from "@casebook/lab/eventually";
import { loadSystemConfig } from "../src/config.ts";
import { labelMatcher } from "../src/domain/label-matcher.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { ONE_HOUR_MS } from "../src/domain/rollup.ts";
import { ONE_DAY_MS, RollupStore, rollupMessageOf } from "../src/store/rollup-store.ts";
import { TenantTsdbs } from "../src/store/tenant-tsdbs.ts";
import { type ReapReport, startTierReaper } from "../src/workers/tier-reaper.ts";

const T0 = Date.UTC(2025, 0, 1);
const labels = labelsFromRecord({ __name__: "disk_free", host: "a" });
const tenant = { id: "acme", maxSeries: undefined, maxSeriesPerMetric: undefined };

test("MT-09 MT-18 the defaults are the text's pyramid: raw 7 d, 1 min 30 d, 1 h 1 y", () => {
  const config = loadSystemConfig({});
  assert.equal(config.rawRetentionMs, 7 * ONE_DAY_MS);
  assert.equal(config.minuteRetentionMs, 30 * ONE_DAY_MS);
  assert.equal(config.hourRetentionMs, 365 * ONE_DAY_MS);
});

test("MT-09 MT-18 the tier reaper deletes each tier past its own retention, by the clock", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "metrics-retention-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const tsdbs = new TenantTsdbs({
    dir: join(dir, "tsdb"),
    blockRangeMs: ONE_DAY_MS,
    defaults: { maxSeries: 100, maxSeriesPerMetric: 100 },
  });
  t.after(() => tsdbs.close());
  const store = await RollupStore.open({ dir: join(dir, "rollups"), latenessMs: 5 * 60_000 });
  t.after(() => store.close());

  // Raw: hourly samples over days 390–400 (blocks of one day compacted out of the head).
  const db = await tsdbs.of(tenant);
  const rawSamples = Array.from({ length: 10 * 24 }, (_, i) => ({
    t: T0 + 390 * ONE_DAY_MS + i * ONE_HOUR_MS,
    v: i,
  }));
  for (let day = 0; day < 10; day++) {
    const samples = rawSamples.slice(day * 24, day * 24 + 24);
    assert.ok((await db.append([{ labels, samples }])).ok);
  }
  // Rollups: a sample every 6 h on days 0, 20, 40, …, 400, closed into hours and day files.
  const days = Array.from({ length: 21 }, (_, i) => i * 20);
  let seq = 0;
  for (const day of days) {
    const samples = [0, 6, 12, 18].map((h) => ({ t: T0 + day * ONE_DAY_MS + h * ONE_HOUR_MS, v: day + h }));
    await store.apply(
      rollupMessageOf({ seq: ++seq, tenant: "acme", partition: 0, series: [{ labels, samples }] }),
    );
  }
  await store.closeHours();
  const hourDir = join(dir, "rollups", "hour", "acme");
  assert.equal((await readdir(hourDir)).length, 21);

  const now = T0 + 400 * ONE_DAY_MS + 12 * ONE_HOUR_MS;
  const clock = new ManualClock(T0 + 100 * ONE_DAY_MS); // before any raw block is a week old
  const reports: ReapReport[] = [];
  const reaper = startTierReaper({
    clock,
    tsdbs,
    store,
    retention: { rawMs: 7 * ONE_DAY_MS, minuteMs: 30 * ONE_DAY_MS, hourMs: 365 * ONE_DAY_MS },
    intervalMs: 20,
    onReaped: (report) => reports.push(report),
    onError: (error) => assert.fail(String(error)),
  });
  t.after(() => reaper.stop());
  await eventually(() => reports.length > 0, { what: "a first pass" });
  const blocksBefore = db.blocks.length;
  assert.ok(blocksBefore >= 8, `raw blocks on disk: ${blocksBefore}`);
  assert.equal(reports.at(-1)!.rawBlocks, 0);

  clock.advance(now - clock.nowMs());
  const reaped = await eventually(() => reports.find((r) => r.rawBlocks > 0), {
    what: "a pass at the new time",
  });
  // Raw: the blocks of days 390–392 (every sample older than now − 7 d) are gone; day 393 is kept.
  assert.equal(reaped.rawBlocks, 3);
  assert.equal(db.blocks.length, blocksBefore - 3);
  assert.ok(db.blocks.every((b) => b.maxt > now - 7 * ONE_DAY_MS));
  assert.equal(
    (await readdir(join(dir, "tsdb", "acme", "blocks"))).filter((n) => n.startsWith("b-")).length,
    blocksBefore - 3,
  );
  const raw = db.select([labelMatcher("=", "host", "a")], 0, now)[0]!;
  assert.ok(raw.timestamps[0]! >= T0 + 393 * ONE_DAY_MS && raw.timestamps[0]! < T0 + 394 * ONE_DAY_MS);
  // 1 min: only windows of the last 30 days (days 380 and 400) are left.
  const minutes = await store.select("acme", "1m", [labelMatcher("=", "host", "a")], 0, now);
  assert.deepEqual(
    [...new Set(minutes[0]!.points.map((p) => Math.floor((p.t - T0) / ONE_DAY_MS)))],
    [380, 400],
  );
  // 1 h: day files whose whole day is older than a year (days 0 and 20) are gone, day 40 is kept.
  const files = await readdir(hourDir);
  assert.equal(files.length, 19);
  assert.ok(!files.includes("2025-01-01.parquet") && !files.includes("2025-01-21.parquet"));
  assert.ok(files.includes("2025-02-10.parquet"));
  const hours = await store.select("acme", "1h", [labelMatcher("=", "host", "a")], 0, now);
  assert.equal(Math.floor((hours[0]!.points[0]!.t - T0) / ONE_DAY_MS), 40);
});

/**
 * Queries through the query router (MT-12). A range query's steps are split into segments by
 * tier (`domain/tier-router.ts`), each evaluated on its tier — raw on the tenant's TSDB, 1 min
 * on the DuckDB table, 1 h on the Parquet files — and the series joined into one matrix, so one
 * panel can be served by the hot and the cold tiers together. An instant query goes to raw
 * unless what it reads reaches past the raw retention (`max_over_time(x[30d])`): then to the
 * finest rollup tier holding it, with the windows that tier has not closed yet rolled up from
 * raw — hot and cold in one answer again.
 *
 * The evaluator reads storage synchronously; the rollup tiers are read asynchronously (SQL).
 * So a rollup read is evaluated twice: first over an empty storage that records which
 * selector reads which window, then — once those windows are loaded from the tier — for real.
 *
 * @example
 * const { value, segments } = await tieredRange({ expr, startMs, endMs, stepMs, db, rollups, tenant, nowMs, settings });
 * const { value: v, tier } = await tieredInstant({ expr, timeMs, db, rollups, tenant, nowMs, settings }); // tier "1m"
 */
import type { SeriesData } from "../domain/head-block.ts";
import type { LabelMatcher } from "../domain/label-matcher.ts";
import { type Labels, seriesKey } from "../domain/labels.ts";
import type { Expr } from "../domain/promql-ast.ts";
import { PromqlEngine } from "../domain/promql-engine.ts";
import { RollupQueryError, rewriteForRollup, rollupSeriesData, rollupView } from "../domain/promql-rollup.ts";
import { PromqlEvalError, type Value } from "../domain/promql-values.ts";
import { rollupPoints } from "../domain/rollup.ts";
import {
  instantTier,
  planTiers,
  TIER_WIDTH_MS,
  type Tier,
  type TierCoverage,
  type TierSegment,
} from "../domain/tier-router.ts";
import type { RollupSeries, RollupStore, RollupTier } from "../store/rollup-store.ts";
import type { Tsdb } from "../store/tsdb.ts";

/** MT-12: the rollup tiers the query router may pick and each tier's retention. */
export interface QueryTiers {
  readonly rollups: RollupStore | undefined;
  readonly rawRetentionMs: number;
  readonly minuteRetentionMs: number;
  readonly hourRetentionMs: number;
}

export interface TieredSettings {
  readonly lookbackMs: number;
  readonly maxSamples: number;
  readonly rawRetentionMs: number;
  readonly minuteRetentionMs: number;
  readonly hourRetentionMs: number;
}

/** What any tiered read needs: the tenant's tiers, the clock's now, the settings. */
export interface TieredRead {
  readonly expr: Expr;
  readonly nowMs: number;
  readonly tenant: string;
  readonly db: Tsdb;
  /** Undefined: no rollup builder runs (the direct ingest path) — everything is raw. */
  readonly rollups: RollupStore | undefined;
  readonly settings: TieredSettings;
}

export interface TieredRange extends TieredRead {
  readonly startMs: number;
  readonly endMs: number;
  readonly stepMs: number;
}

export interface TieredInstant extends TieredRead {
  readonly timeMs: number;
}

async function coverageOf(q: TieredRead): Promise<TierCoverage> {
  const { nowMs, settings, rollups } = q;
  const held = (fromMs: number, toMs: number | undefined) =>
    toMs === undefined || toMs < fromMs ? undefined : { fromMs, toMs };
  return {
    raw: { fromMs: nowMs - settings.rawRetentionMs, toMs: Number.MAX_SAFE_INTEGER },
    "1m": rollups && held(nowMs - settings.minuteRetentionMs, await rollups.closedTo(q.tenant, "1m")),
    "1h": rollups && held(nowMs - settings.hourRetentionMs, await rollups.closedTo(q.tenant, "1h")),
  };
}

const matchersKey = (matchers: readonly LabelMatcher[], mint: number, maxt: number) =>
  `${matchers.map((m) => `${m.name}${m.type}${JSON.stringify(m.value)}`).join(",")}@${mint}:${maxt}`;

/** A raw series' samples → its rollup points of `widthMs` windows (the open one included). */
function rolledUpRaw(series: SeriesData, widthMs: number): RollupSeries {
  const samples = series.timestamps.map((t, i) => ({ t, v: series.values[i]! }));
  return { labels: series.labels, points: rollupPoints(samples, widthMs) };
}

/** Joins the tier's closed windows with the open ones rolled up from raw, per series. */
function withRawTail(closed: readonly RollupSeries[], tail: readonly RollupSeries[]): RollupSeries[] {
  const joined = new Map(
    closed.map((s) => [seriesKey(s.labels), { labels: s.labels, points: [...s.points] }]),
  );
  for (const s of tail) {
    const key = seriesKey(s.labels);
    const known = joined.get(key);
    if (known === undefined) joined.set(key, { labels: s.labels, points: [...s.points] });
    else known.points.push(...s.points);
  }
  return [...joined.values()];
}

/**
 * Evaluates `run` over a rollup tier: first over an empty storage that records which selector
 * reads which window, then over those windows loaded from the tier — and, for windows the tier
 * has not closed yet (from `closedToMs` on), rolled up from the raw samples, so an answer
 * reaching up to now misses none of them.
 */
async function rollupEvaluate(
  q: TieredRead,
  tier: RollupTier,
  closedToMs: number,
  run: (engine: PromqlEngine) => Value,
): Promise<Value> {
  const widthMs = TIER_WIDTH_MS[tier];
  const options = { lookbackMs: widthMs, maxSamples: q.settings.maxSamples };
  const reads: Array<{ matchers: readonly LabelMatcher[]; mint: number; maxt: number }> = [];
  run(
    new PromqlEngine(
      {
        select: (matchers, mint, maxt) => {
          reads.push({ matchers, mint, maxt });
          return [];
        },
      },
      options,
    ),
  );
  const loaded = new Map<string, SeriesData[]>();
  // Views of one selector over one window (avg_over_time's sum and count) share one read.
  const series = new Map<string, RollupSeries[]>();
  for (const read of reads) {
    const { view, matchers } = rollupView(read.matchers);
    const readKey = matchersKey(matchers, read.mint, read.maxt);
    let joined = series.get(readKey);
    if (joined === undefined) {
      joined = await rollupRead(q, tier, closedToMs, matchers, read.mint, read.maxt);
      series.set(readKey, joined);
    }
    loaded.set(
      matchersKey(read.matchers, read.mint, read.maxt),
      joined.map((s) => rollupSeriesData(s, view, widthMs, read.maxt)),
    );
  }
  return run(
    new PromqlEngine(
      { select: (matchers, mint, maxt) => loaded.get(matchersKey(matchers, mint, maxt)) ?? [] },
      options,
    ),
  );
}

/** One selector's rollup series over [mint, maxt]: the tier's closed windows, then the rest rolled up from raw. */
async function rollupRead(
  q: TieredRead,
  tier: RollupTier,
  closedToMs: number,
  matchers: readonly LabelMatcher[],
  mint: number,
  maxt: number,
): Promise<RollupSeries[]> {
  const widthMs = TIER_WIDTH_MS[tier];
  // A point is stamped at its window's last ms: windows starting in [mint − width + 1, maxt − width + 1].
  const firstWindowMs = Math.ceil((mint - widthMs + 1) / widthMs) * widthMs;
  // The 1 min table also holds the open minutes (upserted as samples arrive): read only the
  // closed windows, the raw tail answers from `closedToMs` on.
  const lastWindowMs = Math.min(maxt - widthMs + 1, closedToMs - 1);
  const closed = await q
    .rollups!.select(q.tenant, tier, matchers, firstWindowMs, lastWindowMs, q.settings.maxSamples)
    .catch((error: unknown) => {
      if (error instanceof RangeError)
        throw new PromqlEvalError(
          "query processing would load too many samples into memory in query execution",
        );
      throw error;
    });
  const tailFromMs = Math.max(closedToMs, firstWindowMs);
  const rawTail = maxt < tailFromMs ? [] : q.db.select(matchers, tailFromMs, maxt);
  // The raw samples count against the query's bound like the rollup rows (a builder far behind).
  const tailSamples = rawTail.reduce((n, s) => n + s.timestamps.length, 0);
  if (closed.reduce((n, s) => n + s.points.length, 0) + tailSamples > q.settings.maxSamples)
    throw new PromqlEvalError("query processing would load too many samples into memory in query execution");
  const tail = rawTail.map((s) => rolledUpRaw(s, widthMs));
  return withRawTail(closed, tail);
}

/** The end of what a rollup tier has closed (windows from it on come from raw). */
function closedToOf(coverage: TierCoverage, tier: RollupTier): number {
  return coverage[tier]?.toMs ?? Number.NEGATIVE_INFINITY;
}

/**
 * A range segment on a rollup tier. Planned by step, it lies inside what the tier holds: no raw
 * tail. Planned by reach, its steps may be newer than the tier has closed: the tail from raw.
 */
function rollupSegment(
  q: TieredRange,
  tier: RollupTier,
  segment: TierSegment,
  coverage: TierCoverage,
): Promise<Value> {
  const expr = rewriteForRollup(q.expr, tier, TIER_WIDTH_MS[tier]);
  const range = { startMs: segment.startMs, endMs: segment.endMs, stepMs: q.stepMs };
  const closedToMs = segment.byReach ? closedToOf(coverage, tier) : Number.POSITIVE_INFINITY;
  return rollupEvaluate(q, tier, closedToMs, (engine) => engine.range(expr, range));
}

/** Whether a rollup tier can answer the query (the rewrite refuses what it cannot). */
function answeredBy(expr: Expr): (tier: Tier) => boolean {
  return (tier) => {
    if (tier === "raw") return true;
    try {
      rewriteForRollup(expr, tier, TIER_WIDTH_MS[tier]);
      return true;
    } catch (error) {
      if (error instanceof RollupQueryError) return false;
      throw error;
    }
  };
}

function rawEngine(q: TieredRead): PromqlEngine {
  return new PromqlEngine(
    { select: (matchers, mint, maxt) => q.db.select(matchers, mint, maxt) },
    { lookbackMs: q.settings.lookbackMs, maxSamples: q.settings.maxSamples },
  );
}

/** Evaluates the range query segment by segment and joins the series (in time order). */
export async function tieredRange(q: TieredRange): Promise<{ value: Value; segments: TierSegment[] }> {
  const coverage = await coverageOf(q);
  const reach = { ms: q.startMs - readFromOf(q.expr, q.startMs, q.settings), answeredBy: answeredBy(q.expr) };
  const segments = planTiers({ ...q, coverage, reach });
  const bySeries = new Map<string, { labels: Labels; ts: number[]; vs: number[] }>();
  for (const segment of segments) {
    const range = { startMs: segment.startMs, endMs: segment.endMs, stepMs: q.stepMs };
    const value =
      segment.tier === "raw" || q.rollups === undefined
        ? rawEngine(q).range(q.expr, range)
        : await rollupSegment(q, segment.tier, segment, coverage);
    if (value.type !== "matrix") continue;
    for (const series of value.series) {
      const key = seriesKey(series.labels);
      let joined = bySeries.get(key);
      if (joined === undefined) {
        joined = { labels: series.labels, ts: [], vs: [] };
        bySeries.set(key, joined);
      }
      joined.ts.push(...series.ts);
      for (let i = 0; i < series.vs.length; i++) joined.vs.push(series.vs[i]!);
    }
  }
  return { value: { type: "matrix", series: [...bySeries.values()] }, segments };
}

/**
 * The oldest time the query reads at `timeMs` through its ranges, offsets, `@` and subqueries
 * (not the lookback: a plain selector at the retention's edge stays raw): a dry run over an
 * empty storage records it.
 */
function readFromOf(expr: Expr, timeMs: number, settings: TieredSettings): number {
  let readFromMs = timeMs;
  new PromqlEngine(
    {
      select: (_matchers, mint) => {
        readFromMs = Math.min(readFromMs, mint);
        return [];
      },
    },
    { lookbackMs: 0, maxSamples: settings.maxSamples },
  ).instant(expr, timeMs);
  return readFromMs;
}

/**
 * An instant query through the router (MT-12): raw when raw holds all it reads, else the
 * finest rollup tier holding its oldest read (`instantTier`), its open windows from raw.
 */
export async function tieredInstant(q: TieredInstant): Promise<{ value: Value; tier: Tier }> {
  if (q.rollups === undefined) return { value: rawEngine(q).instant(q.expr, q.timeMs), tier: "raw" };
  const coverage = await coverageOf(q);
  const tier = instantTier(readFromOf(q.expr, q.timeMs, q.settings), coverage);
  if (tier === "raw") return { value: rawEngine(q).instant(q.expr, q.timeMs), tier };
  const expr = rewriteForRollup(q.expr, tier, TIER_WIDTH_MS[tier]);
  const value = await rollupEvaluate(q, tier, closedToOf(coverage, tier), (engine) =>
    engine.instant(expr, q.timeMs),
  );
  return { value, tier };
}

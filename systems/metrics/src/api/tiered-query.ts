/**
 * A range query through the query router (MT-12): the steps are split into segments by tier
 * (`domain/tier-router.ts`), each evaluated on its tier — raw on the tenant's TSDB, 1 min on
 * the DuckDB table, 1 h on the Parquet files — and the series joined into one matrix, so one
 * panel can be served by the hot and the cold tiers together.
 *
 * The evaluator reads storage synchronously; the rollup tiers are read asynchronously (SQL).
 * So a rollup segment is evaluated twice: first over an empty storage that records which
 * selector reads which window, then — once those windows are loaded from the tier — for real.
 *
 * @example
 * const { value, segments } = await tieredRange({ expr, startMs, endMs, stepMs, db, rollups, tenant, nowMs, settings });
 */
import type { SeriesData } from "../domain/head-block.ts";
import type { LabelMatcher } from "../domain/label-matcher.ts";
import { type Labels, seriesKey } from "../domain/labels.ts";
import type { Expr } from "../domain/promql-ast.ts";
import { PromqlEngine } from "../domain/promql-engine.ts";
import { rewriteForRollup, rollupSeriesData, rollupView } from "../domain/promql-rollup.ts";
import { PromqlEvalError, type Value } from "../domain/promql-values.ts";
import { planTiers, TIER_WIDTH_MS, type TierCoverage, type TierSegment } from "../domain/tier-router.ts";
import type { RollupStore, RollupTier } from "../store/rollup-store.ts";
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

export interface TieredRange {
  readonly expr: Expr;
  readonly startMs: number;
  readonly endMs: number;
  readonly stepMs: number;
  readonly nowMs: number;
  readonly tenant: string;
  readonly db: Tsdb;
  /** Undefined: no rollup builder runs (the direct ingest path) — everything is raw. */
  readonly rollups: RollupStore | undefined;
  readonly settings: TieredSettings;
}

async function coverageOf(q: TieredRange): Promise<TierCoverage> {
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

async function rollupSegment(q: TieredRange, tier: RollupTier, segment: TierSegment): Promise<Value> {
  const widthMs = TIER_WIDTH_MS[tier];
  const expr = rewriteForRollup(q.expr, tier, widthMs);
  const options = { lookbackMs: widthMs, maxSamples: q.settings.maxSamples };
  const range = { startMs: segment.startMs, endMs: segment.endMs, stepMs: q.stepMs };
  const reads: Array<{ matchers: readonly LabelMatcher[]; mint: number; maxt: number }> = [];
  new PromqlEngine(
    {
      select: (matchers, mint, maxt) => {
        reads.push({ matchers, mint, maxt });
        return [];
      },
    },
    options,
  ).range(expr, range);
  const loaded = new Map<string, SeriesData[]>();
  for (const read of reads) {
    const { view, matchers } = rollupView(read.matchers);
    // A point is stamped at its window's last ms: windows starting in [mint − width + 1, maxt − width + 1].
    const series = await q
      .rollups!.select(
        q.tenant,
        tier,
        matchers,
        read.mint - widthMs + 1,
        read.maxt - widthMs + 1,
        q.settings.maxSamples,
      )
      .catch((error: unknown) => {
        if (error instanceof RangeError)
          throw new PromqlEvalError(
            "query processing would load too many samples into memory in query execution",
          );
        throw error;
      });
    loaded.set(
      matchersKey(read.matchers, read.mint, read.maxt),
      series.map((s) => rollupSeriesData(s, view, widthMs)),
    );
  }
  return new PromqlEngine(
    { select: (matchers, mint, maxt) => loaded.get(matchersKey(matchers, mint, maxt)) ?? [] },
    options,
  ).range(expr, range);
}

/** Evaluates the range query segment by segment and joins the series (in time order). */
export async function tieredRange(q: TieredRange): Promise<{ value: Value; segments: TierSegment[] }> {
  const segments = planTiers({ ...q, coverage: await coverageOf(q) });
  const bySeries = new Map<string, { labels: Labels; ts: number[]; vs: number[] }>();
  for (const segment of segments) {
    const value =
      segment.tier === "raw" || q.rollups === undefined
        ? new PromqlEngine(
            { select: (matchers, mint, maxt) => q.db.select(matchers, mint, maxt) },
            { lookbackMs: q.settings.lookbackMs, maxSamples: q.settings.maxSamples },
          ).range(q.expr, { startMs: segment.startMs, endMs: segment.endMs, stepMs: q.stepMs })
        : await rollupSegment(q, segment.tier, segment);
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

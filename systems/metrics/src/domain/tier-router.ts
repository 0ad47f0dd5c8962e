/**
 * The query router's rule (MT-12): which tier answers each step of a range query.
 *
 * 1. The preferred tier comes from the step: under 1 min → raw, under 1 h → the 1 min tier,
 *    else the 1 h tier (a point per step needs at most one rollup window per step) — except
 *    for a recent range (`RECENT_RANGE_MS`, a day) that raw holds whole: raw at any step, the
 *    cheaper read there.
 * 2. A tier can answer time T when it holds T: raw from now − raw retention on; a rollup
 *    tier from now − its retention up to where its windows are closed (the builder's
 *    watermark; the 1 h tier only up to its last closed hour).
 * 3. For each step the preferred tier answers if it can; else the nearest coarser tier that
 *    can (old steps past the preferred tier's retention), else the nearest finer one (recent
 *    steps the rollups have not closed yet). So a 10-day panel at a 30 s step is raw for the
 *    last 7 days and the 1 min tier before — hot and cold stitched in one answer.
 *
 * 4. A raw step whose ranges reach past the raw retention (`max_over_time(x[30d])` at 15 s)
 *    goes where an instant query at that step would, if that tier can answer the query
 *    (`byReach`: its windows not closed yet come from raw); else it stays raw.
 *
 * Consecutive steps on one tier form a segment; the API evaluates each on its tier and joins
 * the series. A step no tier holds goes to the preferred tier (it answers nothing there).
 *
 * An instant query has no step: its tier follows what it reads (`instantTier`). Raw when raw
 * holds the oldest time it reads (its longest range, offset and lookback back from its time);
 * else the finest rollup tier that holds that time — `max_over_time(x[30d])` now is the 1 min
 * tier, `[90d]` the 1 h tier — whose windows not closed yet are rolled up from raw on the fly.
 *
 * @example
 * planTiers({ startMs, endMs, stepMs: 30_000, nowMs, coverage });
 * // [{ tier: "1m", startMs, endMs: …}, { tier: "raw", startMs: …, endMs }]
 * instantTier(nowMs - 30 * 86_400_000, coverage); // "1m"
 */

export type Tier = "raw" | "1m" | "1h";

export const TIER_WIDTH_MS: Readonly<Record<Tier, number>> = { raw: 0, "1m": 60_000, "1h": 3_600_000 };
const ORDER: readonly Tier[] = ["raw", "1m", "1h"];

/** What each tier holds now: [from, to] (inclusive), undefined when it holds nothing. */
export type TierCoverage = Readonly<Record<Tier, { fromMs: number; toMs: number } | undefined>>;

export interface TierSegment {
  readonly tier: Tier;
  /** First and last step of the segment (both evaluated). */
  readonly startMs: number;
  readonly endMs: number;
  /**
   * Routed by how far back the query reads (its ranges reach past the raw retention): its
   * steps may be newer than the tier has closed, whose windows then come from raw.
   */
  readonly byReach?: boolean;
}

/** How far back a query reads from each step, and which rollup tiers can answer it. */
export interface QueryReach {
  readonly ms: number;
  readonly answeredBy: (tier: Tier) => boolean;
}

export function preferredTier(stepMs: number): Tier {
  if (stepMs < TIER_WIDTH_MS["1m"]) return "raw";
  if (stepMs < TIER_WIDTH_MS["1h"]) return "1m";
  return "1h";
}

/** The tiers to try, in order: the preferred, then coarser ones, then finer ones. */
function candidates(preferred: Tier): Tier[] {
  const i = ORDER.indexOf(preferred);
  return [preferred, ...ORDER.slice(i + 1), ...ORDER.slice(0, i).reverse()];
}

export function tierAt(t: number, preferred: Tier, coverage: TierCoverage): Tier {
  for (const tier of candidates(preferred)) {
    const held = coverage[tier];
    if (held !== undefined && t >= held.fromMs && t <= held.toMs) return tier;
  }
  return preferred;
}

/**
 * A raw step whose ranges reach past the raw retention (`max_over_time(x[30d])` at a 15 s step)
 * goes where an instant query at that step would — if that rollup tier can answer the query;
 * else it stays raw (a `rate(x[5m])` panel keeps its steps at the retention's edge).
 */
function byReach(
  t: number,
  tier: Tier,
  coverage: TierCoverage,
  reach: QueryReach | undefined,
): Tier | undefined {
  const raw = coverage.raw;
  // Only a step raw itself holds: older raw steps are raw's fallback when no tier holds them.
  if (reach === undefined || tier !== "raw" || raw === undefined) return undefined;
  if (t < raw.fromMs || t - reach.ms >= raw.fromMs) return undefined;
  const reached = instantTier(t - reach.ms, coverage);
  return reached !== "raw" && reach.answeredBy(reached) ? reached : undefined;
}

/**
 * A range no longer than this that the raw tier holds whole — every step and how far back each
 * reads — is read raw at any step (MT-12: "recent ranges go to the hot tier"). Raw is the cheaper
 * read there: at a 15 s scrape a series-hour is 240 samples decoded from Gorilla chunks (~0.15 µs
 * each), where the 1 min tier is 60 DuckDB rows (~12 µs each as read back: a 2.75 h panel of 10
 * series took ~20 ms from the 1 min tier against ~5 from raw). Longer ranges, whose raw read
 * grows with every scrape, keep the step's tier.
 */
export const RECENT_RANGE_MS = 86_400_000;

export function planTiers(query: {
  startMs: number;
  endMs: number;
  stepMs: number;
  coverage: TierCoverage;
  reach?: QueryReach | undefined;
}): TierSegment[] {
  const raw = query.coverage.raw;
  const recent =
    raw !== undefined &&
    query.endMs - query.startMs <= RECENT_RANGE_MS &&
    query.startMs - (query.reach?.ms ?? 0) >= raw.fromMs;
  const preferred = recent ? "raw" : preferredTier(query.stepMs);
  const segments: TierSegment[] = [];
  let current: { tier: Tier; startMs: number; endMs: number; byReach: boolean } | undefined;
  for (let t = query.startMs; t <= query.endMs; t += query.stepMs) {
    const stepTier = tierAt(t, preferred, query.coverage);
    const reached = byReach(t, stepTier, query.coverage, query.reach);
    const tier = reached ?? stepTier;
    if (current !== undefined && current.tier === tier && current.byReach === (reached !== undefined))
      current.endMs = t;
    else {
      if (current !== undefined) segments.push(current);
      current = { tier, startMs: t, endMs: t, byReach: reached !== undefined };
    }
  }
  if (current !== undefined) segments.push(current);
  return segments;
}

/**
 * The tier of an instant query that reads back to `readFromMs`: raw if raw holds it, else the
 * finest rollup tier that does; past every retention, the coarsest tier holding anything (it
 * answers what it kept).
 */
export function instantTier(readFromMs: number, coverage: TierCoverage): Tier {
  const raw = coverage.raw;
  if (raw === undefined || readFromMs >= raw.fromMs) return "raw";
  const rollups = ORDER.slice(1);
  const holding = rollups.find((tier) => {
    const held = coverage[tier];
    return held !== undefined && readFromMs >= held.fromMs;
  });
  return holding ?? [...rollups].reverse().find((tier) => coverage[tier] !== undefined) ?? "raw";
}

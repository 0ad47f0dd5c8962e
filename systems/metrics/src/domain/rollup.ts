/**
 * Rollups (MT-10/11): a series' samples summarised per fixed window — min, max, sum and count,
 * not only the mean — so a one-second spike is still visible (as the window's max) in the 1 h
 * tier, and averages stay exact (sum / count) across tiers. Each tier is built from the one
 * below: `rollupPoints` turns raw samples into 1 min points, `rollupOfRollups` turns 1 min
 * points into 1 h points (min of mins, max of maxes, sum of sums, sum of counts), which equals
 * rolling the raw samples up to 1 h directly. Staleness markers are not values and are left
 * out; windows are aligned to multiples of their width (Unix epoch), labelled by their start.
 *
 * @example
 * const minute = rollupPoints(samples, 60_000);       // [{ t, min, max, sum, count }, …]
 * const hour = rollupOfRollups(minute, 3_600_000);    // same as rollupPoints(samples, 3_600_000)
 */
import type { Sample } from "./head-block.ts";
import { isStaleNaN } from "./staleness.ts";

export interface RollupPoint {
  /** Start of the window (ms, a multiple of its width). */
  readonly t: number;
  readonly min: number;
  readonly max: number;
  readonly sum: number;
  readonly count: number;
}

export const ONE_MINUTE_MS = 60_000;
export const ONE_HOUR_MS = 3_600_000;

function windowStart(t: number, widthMs: number): number {
  return Math.floor(t / widthMs) * widthMs;
}

function merge(points: Iterable<RollupPoint>, widthMs: number): RollupPoint[] {
  const out: RollupPoint[] = [];
  let current: { t: number; min: number; max: number; sum: number; count: number } | undefined;
  for (const p of points) {
    const t = windowStart(p.t, widthMs);
    if (current !== undefined && current.t !== t) {
      out.push(current);
      current = undefined;
    }
    if (current === undefined) current = { t, min: p.min, max: p.max, sum: p.sum, count: p.count };
    else {
      current.min = Math.min(current.min, p.min);
      current.max = Math.max(current.max, p.max);
      current.sum += p.sum;
      current.count += p.count;
    }
  }
  if (current !== undefined) out.push(current);
  return out;
}

/** Raw samples (in time order) → one point per `widthMs` window that holds any value. */
export function rollupPoints(samples: readonly Sample[], widthMs: number): RollupPoint[] {
  const points = samples
    .filter((s) => !isStaleNaN(s.v))
    .map((s) => ({ t: s.t, min: s.v, max: s.v, sum: s.v, count: 1 }));
  return merge(points, widthMs);
}

/** The tier above from the tier below: `widthMs` must be a multiple of the points' width. */
export function rollupOfRollups(points: readonly RollupPoint[], widthMs: number): RollupPoint[] {
  return merge(points, widthMs);
}

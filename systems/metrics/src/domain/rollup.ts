/**
 * Rollups (MT-10/11): a series' samples summarised per fixed window — min, max, sum and count,
 * not only the mean — so a one-second spike is still visible (as the window's max) in the 1 h
 * tier, and averages stay exact (sum / count) across tiers. Each tier is built from the one
 * below: `rollupPoints` turns raw samples into 1 min points, `rollupOfRollups` turns 1 min
 * points into 1 h points (min of mins, max of maxes, sum of sums, sum of counts), which equals
 * rolling the raw samples up to 1 h directly. Staleness markers are not values and are left
 * out; windows are aligned to multiples of their width (Unix epoch), labelled by their start.
 *
 * For `rate`/`increase`/`delta` a window also keeps its first and last sample (time and value)
 * and its reset carry: the sum of the values the counter held just before each reset inside
 * the window (Prometheus's counter correction), so its reset-aware increase is
 * `last − first + resetCarry`. Two windows in time order merge exactly —
 * `carry(a) + carry(b) + (b.first < a.last ? a.last : 0)` — which is all Prometheus's
 * extrapolated rate needs besides the count. The carry is kept rather than the increase itself
 * so a range's increase is computed as Prometheus computes it (`last − first`, plus the values
 * before the resets): bit for bit the same without resets, not a sum of per-window increases.
 * A point without `counter` was written before the tiers kept it (an old 1 min row or 1 h file).
 *
 * @example
 * const minute = rollupPoints(samples, 60_000);       // [{ t, min, max, sum, count }, …]
 * const hour = rollupOfRollups(minute, 3_600_000);    // same as rollupPoints(samples, 3_600_000)
 */
import type { Sample } from "./head-block.ts";
import { isStaleNaN } from "./staleness.ts";

/** A window's counter shape: first and last sample, and the values before its resets. */
export interface CounterWindow {
  readonly firstT: number;
  readonly firstV: number;
  readonly lastT: number;
  readonly lastV: number;
  /** Sum of the values held just before each reset (a sample lower than the one before it). */
  readonly resetCarry: number;
}

export interface RollupPoint {
  /** Start of the window (ms, a multiple of its width). */
  readonly t: number;
  readonly min: number;
  readonly max: number;
  readonly sum: number;
  readonly count: number;
  /** Absent on windows written before the tiers kept it: no rate over them. */
  readonly counter?: CounterWindow;
}

export const ONE_MINUTE_MS = 60_000;
export const ONE_HOUR_MS = 3_600_000;

function windowStart(t: number, widthMs: number): number {
  return Math.floor(t / widthMs) * widthMs;
}

/**
 * Two counter windows, `a` before `b` in time, as one: a reset at the seam (b's first sample
 * below a's last) carries a's last value. Undefined when either is unknown or they overlap in
 * time (samples out of order: the carry cannot be told).
 */
export function mergeCounters(
  a: CounterWindow | undefined,
  b: CounterWindow | undefined,
): CounterWindow | undefined {
  if (a === undefined || b === undefined || !(a.lastT < b.firstT)) return undefined;
  const seam = b.firstV < a.lastV ? a.lastV : 0;
  return {
    firstT: a.firstT,
    firstV: a.firstV,
    lastT: b.lastT,
    lastV: b.lastV,
    resetCarry: a.resetCarry + seam + b.resetCarry,
  };
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function merge(points: Iterable<RollupPoint>, widthMs: number): RollupPoint[] {
  const out: RollupPoint[] = [];
  let current: Mutable<RollupPoint> | undefined;
  for (const p of points) {
    const t = windowStart(p.t, widthMs);
    if (current !== undefined && current.t !== t) {
      out.push(current);
      current = undefined;
    }
    if (current === undefined) {
      current = { t, min: p.min, max: p.max, sum: p.sum, count: p.count };
      if (p.counter !== undefined) current.counter = p.counter;
    } else {
      current.min = Math.min(current.min, p.min);
      current.max = Math.max(current.max, p.max);
      current.sum += p.sum;
      current.count += p.count;
      const counter = mergeCounters(current.counter, p.counter);
      if (counter === undefined) delete current.counter;
      else current.counter = counter;
    }
  }
  if (current !== undefined) out.push(current);
  return out;
}

/** Raw samples (in time order) → one point per `widthMs` window that holds any value. */
export function rollupPoints(samples: readonly Sample[], widthMs: number): RollupPoint[] {
  const timestamps = new Float64Array(samples.length);
  const values = new Float64Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    timestamps[i] = samples[i]!.t;
    values[i] = samples[i]!.v;
  }
  return rollupColumns(timestamps, values, 0, samples.length, widthMs);
}

/**
 * `rollupPoints` of the samples `[from, to)` of two columns (a batch's series, `sample-columns.ts`),
 * leaving out those before `minT` (late: the caller counts them).
 */
export function rollupColumns(
  timestamps: Float64Array,
  values: Float64Array,
  from: number,
  to: number,
  widthMs: number,
  minT = Number.NEGATIVE_INFINITY,
): RollupPoint[] {
  const out: RollupPoint[] = [];
  let current: Mutable<RollupPoint> | undefined;
  let counter: Mutable<CounterWindow> | undefined;
  for (let i = from; i < to; i++) {
    const t = timestamps[i]!;
    const v = values[i]!;
    if (t < minT || isStaleNaN(v)) continue;
    const start = windowStart(t, widthMs);
    if (current === undefined || counter === undefined || current.t !== start) {
      counter = { firstT: t, firstV: v, lastT: t, lastV: v, resetCarry: 0 };
      current = { t: start, min: v, max: v, sum: v, count: 1, counter };
      out.push(current);
      continue;
    }
    current.min = Math.min(current.min, v);
    current.max = Math.max(current.max, v);
    current.sum += v;
    current.count += 1;
    if (v < counter.lastV) counter.resetCarry += counter.lastV; // Prometheus's reset rule
    counter.lastT = t;
    counter.lastV = v;
  }
  return out;
}

/** The tier above from the tier below: `widthMs` must be a multiple of the points' width. */
export function rollupOfRollups(points: readonly RollupPoint[], widthMs: number): RollupPoint[] {
  return merge(points, widthMs);
}

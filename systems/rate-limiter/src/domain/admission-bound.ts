/**
 * The most a correct limiter may admit for one key over an interval: what RL-04/RL-17
 * assert under bursts, and what the bench prints beside "allowed". Pure arithmetic.
 *
 * - token bucket, GCRA, leaky bucket: the burst (capacity / burst / queue) plus the
 *   refill over the interval — "capacity + refill × elapsed";
 * - sliding-window log: `limit` per window length the interval spans;
 * - fixed window and sliding-window counter: `limit` per clock-aligned window the
 *   interval touches (a window's own count never passes `limit`; across a boundary two
 *   windows' worth can pass: RL-07's 2×).
 *
 * @example
 * admissionBound({ algorithm: "token-bucket", capacity: 100, ratePerS: 10 }, 0, 2_000); // 120
 * admissionBound({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 59_000, 61_000); // 200
 */
import type { Limit } from "./algorithm.ts";

/**
 * `startMs`/`endMs` are wall-clock ms (the windows are aligned on the engine's clock,
 * Redis TIME); widen them by the clocks' disagreement before asking.
 */
export function admissionBound(limit: Limit, startMs: number, endMs: number): number {
  if (!(Number.isFinite(startMs) && Number.isFinite(endMs) && endMs >= startMs)) {
    throw new RangeError(`need finite startMs <= endMs, got ${startMs}, ${endMs}`);
  }
  const elapsedS = (endMs - startMs) / 1_000;
  switch (limit.algorithm) {
    case "token-bucket":
      return limit.capacity + limit.ratePerS * elapsedS;
    case "gcra":
      return limit.burst + limit.ratePerS * elapsedS;
    case "leaky-bucket":
      return limit.queueCapacity + limit.ratePerS * elapsedS;
    case "sliding-window-log":
      return limit.limit * Math.max(1, Math.ceil((endMs - startMs) / limit.windowMs));
    case "fixed-window":
    case "sliding-window-counter":
      return limit.limit * windowsTouched(limit.windowMs, startMs, endMs);
  }
}

/** Clock-aligned windows of `windowMs` that [startMs, endMs] touches. */
function windowsTouched(windowMs: number, startMs: number, endMs: number): number {
  return Math.floor(endMs / windowMs) - Math.floor(startMs / windowMs) + 1;
}

/**
 * Sliding window counter (000 §1.3): approximates the sliding log with two counters —
 * the current clock-aligned window and the previous one, weighted by how much of it
 * the sliding span (now − windowMs, now] still overlaps:
 *   estimate = previous × (windowMs − elapsedInWindow) / windowMs + current.
 * Constant memory; the error comes from assuming the previous window's units were
 * spread evenly (RL-07 measures it against the exact log).
 *
 * The comparison is kept in integers by multiplying through by windowMs:
 * previous × (windowMs − elapsed) + current × windowMs + cost × windowMs ≤ limit × windowMs.
 *
 * Mirrored by src/store/scripts/sliding-window-counter-n.lua.
 */
import type { Algorithm, Decision, SlidingWindowCounterLimit, StoredState } from "./algorithm.ts";
import { readStoredInteger, validateCall } from "./algorithm.ts";

export interface SlidingWindowCounterState {
  /** Start of the current window: a multiple of windowMs. */
  readonly windowStartMs: number;
  readonly currentCount: number;
  /** Units admitted in the window just before windowStartMs. */
  readonly previousCount: number;
}

/** The counters in force at `nowMs`: rolled forward by one window, or reset after two. */
function rollTo(
  state: SlidingWindowCounterState | undefined,
  nowMs: number,
  windowMs: number,
): SlidingWindowCounterState {
  const windowStartMs = nowMs - (nowMs % windowMs);
  // RL-05: a stored window later than "now"'s (clock stepped back) is kept as it is.
  if (state !== undefined && state.windowStartMs >= windowStartMs) return state;
  const previousCount = state?.windowStartMs === windowStartMs - windowMs ? state.currentCount : 0;
  return { windowStartMs, currentCount: 0, previousCount };
}

/** The estimate × windowMs (an integer). Elapsed is clamped at 0 for a clock that stepped back. */
function usedScaled(counters: SlidingWindowCounterState, nowMs: number, windowMs: number): number {
  const elapsedMs = Math.max(0, nowMs - counters.windowStartMs);
  return counters.previousCount * (windowMs - elapsedMs) + counters.currentCount * windowMs;
}

/** Least wait until `cost` more fits: the previous window's weight decays linearly to 0. */
function retryAfterMs(
  counters: SlidingWindowCounterState,
  nowMs: number,
  limit: SlidingWindowCounterLimit,
  cost: number,
) {
  const { windowMs } = limit;
  const room = limit.limit - cost - counters.currentCount;
  if (room >= 0) {
    // Still in this window: wait until previous × (windowMs − elapsed) ≤ room × windowMs.
    const elapsedMs = windowMs - Math.floor((room * windowMs) / counters.previousCount);
    return counters.windowStartMs + elapsedMs - nowMs;
  }
  // The current count alone is too much: it becomes the next window's "previous" and must decay.
  const elapsedMs = windowMs - Math.floor(((limit.limit - cost) * windowMs) / counters.currentCount);
  return counters.windowStartMs + windowMs + elapsedMs - nowMs;
}

/** Ms until the estimate is 0: the end of the window after the last one holding units. */
function untilEmptyMs(counters: SlidingWindowCounterState, nowMs: number, windowMs: number): number {
  if (counters.currentCount > 0) return counters.windowStartMs + 2 * windowMs - nowMs;
  if (counters.previousCount > 0) return counters.windowStartMs + windowMs - nowMs;
  return 0;
}

/**
 * Admits `cost` units if the weighted estimate leaves room for them.
 *
 * @example
 * const limit = { algorithm: "sliding-window-counter", limit: 10, windowMs: 1_000 } as const;
 * const state = { windowStartMs: 0, currentCount: 10, previousCount: 0 };
 * decideSlidingWindowCounter(state, 1_250, limit, 1);
 * // 10 × 0.75 + 0 = 7.5 used: allowed, remaining 1
 */
function decideSlidingWindowCounter(
  state: SlidingWindowCounterState | undefined,
  nowMs: number,
  limit: SlidingWindowCounterLimit,
  cost: number,
): Decision<SlidingWindowCounterState> {
  validateCall(limit, nowMs, cost);
  const { windowMs } = limit;
  const counters = rollTo(state, nowMs, windowMs);
  const capacityScaled = limit.limit * windowMs;
  const used = usedScaled(counters, nowMs, windowMs);
  if (used + cost * windowMs > capacityScaled) {
    return {
      state: state ?? counters,
      allowed: false,
      remaining: Math.max(0, Math.floor((capacityScaled - used) / windowMs)),
      retryAfterMs: retryAfterMs(counters, nowMs, limit, cost),
      resetMs: untilEmptyMs(counters, nowMs, windowMs),
      delayMs: 0,
      ttlMs: slidingWindowCounterTtlMs(counters, nowMs, limit),
    };
  }
  const next = { ...counters, currentCount: counters.currentCount + cost };
  return {
    state: next,
    allowed: true,
    remaining: Math.floor((capacityScaled - used - cost * windowMs) / windowMs),
    retryAfterMs: 0,
    resetMs: untilEmptyMs(next, nowMs, windowMs),
    delayMs: 0,
    ttlMs: slidingWindowCounterTtlMs(next, nowMs, limit),
  };
}

/**
 * Takes `cost` units back from the current window (never below 0).
 *
 * @example
 * const limit = { algorithm: "sliding-window-counter", limit: 10, windowMs: 1_000 } as const;
 * refundSlidingWindowCounter({ windowStartMs: 0, currentCount: 3, previousCount: 4 }, 10, limit, 1);
 * // { windowStartMs: 0, currentCount: 2, previousCount: 4 }
 */
function refundSlidingWindowCounter(
  state: SlidingWindowCounterState | undefined,
  nowMs: number,
  limit: SlidingWindowCounterLimit,
  cost: number,
): SlidingWindowCounterState {
  validateCall(limit, nowMs, cost);
  const counters = rollTo(state, nowMs, limit.windowMs);
  return { ...counters, currentCount: Math.max(0, counters.currentCount - cost) };
}

/**
 * The counters matter until the current window has also served as "previous":
 * two windows from its start.
 *
 * @example
 * slidingWindowCounterTtlMs({ windowStartMs: 0, currentCount: 1, previousCount: 0 }, 250, { algorithm: "sliding-window-counter", limit: 10, windowMs: 1_000 }); // 1750
 */
function slidingWindowCounterTtlMs(
  state: SlidingWindowCounterState,
  nowMs: number,
  limit: SlidingWindowCounterLimit,
): number {
  return Math.max(1, state.windowStartMs + 2 * limit.windowMs - nowMs);
}

/**
 * The Redis hash of the counters.
 *
 * @example
 * slidingWindowCounterToStored({ windowStartMs: 0, currentCount: 1, previousCount: 2 });
 * // { kind: "hash", fields: { windowStartMs: "0", currentCount: "1", previousCount: "2" } }
 */
function slidingWindowCounterToStored(state: SlidingWindowCounterState): StoredState {
  return {
    kind: "hash",
    fields: {
      windowStartMs: String(state.windowStartMs),
      currentCount: String(state.currentCount),
      previousCount: String(state.previousCount),
    },
  };
}

/**
 * Reads the counters back from their hash (undefined when the key is absent).
 *
 * @example
 * slidingWindowCounterFromStored({ kind: "hash", fields: { windowStartMs: "0", currentCount: "1", previousCount: "2" } });
 */
function slidingWindowCounterFromStored(stored: StoredState): SlidingWindowCounterState | undefined {
  if (stored.kind !== "hash") throw new Error(`a sliding counter is stored as a hash, got a ${stored.kind}`);
  if (Object.keys(stored.fields).length === 0) return undefined;
  const state = {
    windowStartMs: readStoredInteger(stored.fields, "windowStartMs"),
    currentCount: readStoredInteger(stored.fields, "currentCount"),
    previousCount: readStoredInteger(stored.fields, "previousCount"),
  };
  if (state.currentCount < 0 || state.previousCount < 0) throw new Error("stored counts are negative");
  return state;
}

/**
 * This key's ARGV slice for sliding-window-counter-n.lua: limit, windowMs, cost.
 *
 * @example
 * slidingWindowCounterScriptArgs({ algorithm: "sliding-window-counter", limit: 100, windowMs: 60_000 }, 1); // ["100", "60000", "1"]
 */
function slidingWindowCounterScriptArgs(limit: SlidingWindowCounterLimit, cost: number): string[] {
  return [String(limit.limit), String(limit.windowMs), String(cost)];
}

/** sliding-window-counter as the one object the registry (`algorithms.ts`) and the stores use. */
export const slidingWindowCounter: Algorithm<SlidingWindowCounterLimit, SlidingWindowCounterState> = {
  name: "sliding-window-counter",
  scriptName: "sliding-window-counter-n.lua",
  argvStride: 3,
  decide: decideSlidingWindowCounter,
  refund: refundSlidingWindowCounter,
  ttlMs: slidingWindowCounterTtlMs,
  toStored: slidingWindowCounterToStored,
  fromStored: slidingWindowCounterFromStored,
  scriptArgs: slidingWindowCounterScriptArgs,
};

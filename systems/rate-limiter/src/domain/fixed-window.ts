/**
 * Fixed window counter (000 §1.3): counts units inside each clock-aligned window
 * (each minute of the clock for a 60 s window). The cheapest algorithm — one counter
 * per key, its window's end the key's expiry — but it lets up to 2 × the limit through across a
 * window boundary: `limit` at the end of one window and `limit` at the start of the
 * next (RL-07, measured in algorithm-comparison.ts).
 *
 * Mirrored by src/store/scripts/fixed-window-n.lua.
 */
import type { Algorithm, Decision, FixedWindowLimit, StoredState } from "./algorithm.ts";
import { validateCall } from "./algorithm.ts";
import { readStoredTimed, timedToStored } from "./stored-timed.ts";

/** The older formats' fields: a hash {windowStartMs, count}, then a string "windowStartMs:count". */
const legacyFields = ["windowStartMs", "count"] as const;

export interface FixedWindowState {
  /** Start of the window `count` belongs to: a multiple of windowMs. */
  readonly windowStartMs: number;
  /** Units admitted in that window. */
  readonly count: number;
}

/** The window in force at `nowMs`, with its count (0 for a new window). */
function windowAt(state: FixedWindowState | undefined, nowMs: number, windowMs: number): FixedWindowState {
  const windowStartMs = nowMs - (nowMs % windowMs);
  // RL-05: when the clock stepped back the stored window is later than "now"'s; keeping it
  // (instead of opening a fresh one) means a clock step never reopens a spent window.
  if (state !== undefined && state.windowStartMs >= windowStartMs) return state;
  return { windowStartMs, count: 0 };
}

/**
 * Admits `cost` units if the current window has room for them.
 *
 * @example
 * const limit = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 } as const;
 * const d = decideFixedWindow(undefined, 59_000, limit, 1);
 * // allowed, remaining 99, resetMs 1000 (the window ends at 60 000)
 */
function decideFixedWindow(
  state: FixedWindowState | undefined,
  nowMs: number,
  limit: FixedWindowLimit,
  cost: number,
): Decision<FixedWindowState> {
  validateCall(limit, nowMs, cost);
  const current = windowAt(state, nowMs, limit.windowMs);
  const untilEndMs = current.windowStartMs + limit.windowMs - nowMs;
  if (current.count + cost > limit.limit) {
    return {
      state: state ?? current,
      allowed: false,
      remaining: limit.limit - current.count,
      retryAfterMs: untilEndMs,
      resetMs: untilEndMs,
      delayMs: 0,
      ttlMs: untilEndMs,
    };
  }
  const next = { windowStartMs: current.windowStartMs, count: current.count + cost };
  return {
    state: next,
    allowed: true,
    remaining: limit.limit - next.count,
    retryAfterMs: 0,
    resetMs: untilEndMs,
    delayMs: 0,
    ttlMs: untilEndMs,
  };
}

/**
 * Takes `cost` units back from the current window (never below 0). A spend made in a
 * window that has since ended is already forgotten, so there is nothing to give back.
 *
 * @example
 * const limit = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 } as const;
 * refundFixedWindow({ windowStartMs: 0, count: 3 }, 10, limit, 1); // { windowStartMs: 0, count: 2 }
 */
function refundFixedWindow(
  state: FixedWindowState | undefined,
  nowMs: number,
  limit: FixedWindowLimit,
  cost: number,
): FixedWindowState {
  validateCall(limit, nowMs, cost);
  const current = windowAt(state, nowMs, limit.windowMs);
  return { windowStartMs: current.windowStartMs, count: Math.max(0, current.count - cost) };
}

/**
 * The key lives until its window ends; after that a new window starts from 0 anyway.
 *
 * @example
 * fixedWindowTtlMs({ windowStartMs: 0, count: 1 }, 59_000, { algorithm: "fixed-window", limit: 100, windowMs: 60_000 }); // 1000
 */
function fixedWindowTtlMs(state: FixedWindowState, nowMs: number, limit: FixedWindowLimit): number {
  return Math.max(1, state.windowStartMs + limit.windowMs - nowMs);
}

/**
 * The Redis form of a window, as rate-limiter-flexible stores its counter (issue 15): the count
 * alone, an integer, and the window's end as the key's absolute expiry (stored-timed.ts): the
 * window's start is read back as PEXPIRETIME − windowMs.
 *
 * @example
 * fixedWindowToStored({ windowStartMs: 60_000, count: 3 }, { algorithm: "fixed-window", limit: 100, windowMs: 60_000 });
 * // { kind: "string", value: "3", expiresAtMs: 120000 }
 */
function fixedWindowToStored(state: FixedWindowState, limit: FixedWindowLimit): StoredState {
  return timedToStored(state.count, state.windowStartMs, limit.windowMs);
}

/**
 * Reads a window back from its count and its key's expiry, or from one of the two older
 * formats, a string "windowStartMs:count" or a hash {windowStartMs, count}, which carry the
 * start themselves (undefined when the key is absent; throws when corrupt).
 *
 * @example
 * const limit = { algorithm: "fixed-window", limit: 100, windowMs: 60_000 } as const;
 * fixedWindowFromStored({ kind: "string", value: "3", expiresAtMs: 120_000 }, limit); // { windowStartMs: 60000, count: 3 }
 * fixedWindowFromStored({ kind: "string", value: "60000:3" }, limit); // { windowStartMs: 60000, count: 3 }
 */
function fixedWindowFromStored(stored: StoredState, limit: FixedWindowLimit): FixedWindowState | undefined {
  const timed = readStoredTimed(stored, legacyFields, "windowStartMs", limit.windowMs);
  if (timed === undefined) return undefined;
  const state = { windowStartMs: timed[1], count: timed[0] };
  if (state.count < 0) throw new Error(`stored count is negative: ${state.count}`);
  return state;
}

/**
 * This key's ARGV slice for fixed-window-n.lua: limit, windowMs, cost.
 *
 * @example
 * fixedWindowScriptArgs({ algorithm: "fixed-window", limit: 100, windowMs: 60_000 }, 1); // ["100", "60000", "1"]
 */
function fixedWindowScriptArgs(limit: FixedWindowLimit, cost: number): string[] {
  return [String(limit.limit), String(limit.windowMs), String(cost)];
}

/** fixed-window as the one object the registry (`algorithms.ts`) and the stores use. */
export const fixedWindow: Algorithm<FixedWindowLimit, FixedWindowState> = {
  name: "fixed-window",
  scriptName: "fixed-window-n.lua",
  argvStride: 3,
  decide: decideFixedWindow,
  refund: refundFixedWindow,
  ttlMs: fixedWindowTtlMs,
  toStored: fixedWindowToStored,
  fromStored: fixedWindowFromStored,
  scriptArgs: fixedWindowScriptArgs,
};

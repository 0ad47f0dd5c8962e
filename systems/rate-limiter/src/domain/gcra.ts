/**
 * GCRA, the generic cell rate algorithm: one timestamp per key, the theoretical
 * arrival time (TAT) at which the key would be idle again if it kept to the rate.
 * Each unit pushes TAT forward by the emission interval T = 1 / ratePerS; a call is
 * admitted while TAT stays within the burst tolerance `burst × T` of now. It behaves
 * like a token bucket of capacity `burst` (bursts, then the average rate) with a
 * single number of state.
 *
 * TAT is kept in whole µs (ms would round a 3 000/s interval to nothing); T is rounded
 * to whole µs, so the rate is exact whenever 1e6 / ratePerS is an integer and off by at
 * most 0.5 µs per unit otherwise (3 000/s runs at 3 003/s).
 *
 * Mirrored by src/store/scripts/gcra-n.lua.
 */
import type { Algorithm, Decision, GcraLimit, StoredState } from "./algorithm.ts";
import { readStoredInteger, validateCall } from "./algorithm.ts";

export interface GcraState {
  /** Theoretical arrival time, engine µs: the key is idle again from here on. */
  readonly tatUs: number;
}

/**
 * The emission interval: µs between units at the average rate.
 *
 * @example
 * gcraIntervalUs({ algorithm: "gcra", burst: 5, ratePerS: 0.5 }); // 2_000_000
 */
export function gcraIntervalUs(limit: GcraLimit): number {
  // floor(x + 0.5) rather than Math.round: the script computes exactly this expression.
  return Math.floor(1_000_000 / limit.ratePerS + 0.5);
}

/** TAT at `nowUs`: never in the past; kept when in the future, even if the clock stepped back (RL-05). */
function tatAt(state: GcraState | undefined, nowUs: number): number {
  return Math.max(state?.tatUs ?? nowUs, nowUs);
}

/**
 * Admits `cost` units if the new TAT stays within the burst tolerance.
 *
 * @example
 * const limit = { algorithm: "gcra", burst: 2, ratePerS: 1 } as const;
 * let d = decideGcra(undefined, 0, limit, 1); // allowed, remaining 1
 * d = decideGcra(d.state, 0, limit, 1);       // allowed, remaining 0
 * decideGcra(d.state, 0, limit, 1);           // refused, retryAfterMs 1000
 */
function decideGcra(
  state: GcraState | undefined,
  nowMs: number,
  limit: GcraLimit,
  cost: number,
): Decision<GcraState> {
  validateCall(limit, nowMs, cost);
  const intervalUs = gcraIntervalUs(limit);
  const toleranceUs = limit.burst * intervalUs;
  const nowUs = nowMs * 1000;
  const tatUs = tatAt(state, nowUs);
  const nextTatUs = tatUs + cost * intervalUs;
  if (nextTatUs - nowUs > toleranceUs) {
    return {
      state: state ?? { tatUs },
      allowed: false,
      remaining: Math.max(0, Math.floor((nowUs + toleranceUs - tatUs) / intervalUs)),
      retryAfterMs: Math.ceil((nextTatUs - toleranceUs - nowUs) / 1000),
      resetMs: Math.ceil((tatUs - nowUs) / 1000),
      delayMs: 0,
      ttlMs: Math.max(1, Math.ceil((tatUs - nowUs) / 1000)),
    };
  }
  const untilIdleMs = Math.ceil((nextTatUs - nowUs) / 1000);
  return {
    state: { tatUs: nextTatUs },
    allowed: true,
    remaining: Math.floor((nowUs + toleranceUs - nextTatUs) / intervalUs),
    retryAfterMs: 0,
    resetMs: untilIdleMs,
    delayMs: 0,
    ttlMs: untilIdleMs,
  };
}

/**
 * Moves TAT back by `cost` intervals (never before now).
 *
 * @example
 * refundGcra({ tatUs: 3_000_000 }, 0, { algorithm: "gcra", burst: 5, ratePerS: 1 }, 1); // { tatUs: 2_000_000 }
 */
function refundGcra(state: GcraState | undefined, nowMs: number, limit: GcraLimit, cost: number): GcraState {
  validateCall(limit, nowMs, cost);
  const nowUs = nowMs * 1000;
  return { tatUs: Math.max(nowUs, tatAt(state, nowUs) - cost * gcraIntervalUs(limit)) };
}

/**
 * The key lives until TAT: from then on it is the same as no key.
 *
 * @example
 * gcraTtlMs({ tatUs: 3_000_000 }, 1_000, { algorithm: "gcra", burst: 5, ratePerS: 1 }); // 2000
 */
function gcraTtlMs(state: GcraState, nowMs: number, _limit: GcraLimit): number {
  return Math.max(1, Math.ceil((state.tatUs - nowMs * 1000) / 1000));
}

/**
 * The Redis hash of a GCRA key.
 *
 * @example
 * gcraToStored({ tatUs: 3_000_000 }); // { kind: "hash", fields: { tatUs: "3000000" } }
 */
function gcraToStored(state: GcraState): StoredState {
  return { kind: "hash", fields: { tatUs: String(state.tatUs) } };
}

/**
 * Reads a GCRA key back from its hash (undefined when the key is absent).
 *
 * @example
 * gcraFromStored({ kind: "hash", fields: { tatUs: "3000000" } }); // { tatUs: 3000000 }
 */
function gcraFromStored(stored: StoredState): GcraState | undefined {
  if (stored.kind !== "hash") throw new Error(`a GCRA key is stored as a hash, got a ${stored.kind}`);
  if (Object.keys(stored.fields).length === 0) return undefined;
  return { tatUs: readStoredInteger(stored.fields, "tatUs") };
}

/**
 * This key's ARGV slice for gcra-n.lua: burst, ratePerS, cost.
 *
 * @example
 * gcraScriptArgs({ algorithm: "gcra", burst: 5, ratePerS: 0.5 }, 1); // ["5", "0.5", "1"]
 */
function gcraScriptArgs(limit: GcraLimit, cost: number): string[] {
  return [String(limit.burst), String(limit.ratePerS), String(cost)];
}

/** gcra as the one object the registry (`algorithms.ts`) and the stores use. */
export const gcra: Algorithm<GcraLimit, GcraState> = {
  name: "gcra",
  scriptName: "gcra-n.lua",
  argvStride: 3,
  decide: decideGcra,
  refund: refundGcra,
  ttlMs: gcraTtlMs,
  toStored: gcraToStored,
  fromStored: gcraFromStored,
  scriptArgs: gcraScriptArgs,
};

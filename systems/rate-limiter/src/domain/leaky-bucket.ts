/**
 * Leaky bucket as a SHAPER (000 §1.3: "the mirror of the token bucket: the output is
 * uniform, for a system that does not tolerate bursts"). A queue level drains at a
 * fixed `ratePerS`; a request joins the queue if `queueCapacity` has room for its
 * cost and is "allowed with delayMs": the caller waits delayMs — the time for the
 * units ahead of it to drain — before proceeding, so what reaches the protected
 * system is spaced uniformly at 1 / ratePerS. When the queue is full the request is
 * refused with retryAfterMs.
 *
 * State mirrors the token bucket (micro-units, last write time, lazy drain, elapsed
 * clamped at 0, nothing written on refusal). Mirrored by src/store/scripts/leaky-bucket-n.lua.
 */
import type { Algorithm, Decision, LeakyBucketLimit, StoredState } from "./algorithm.ts";
import { MICRO_PER_UNIT, msUntilMicro, readStoredInteger, validateCall } from "./algorithm.ts";

export interface LeakyBucketState {
  /** Units queued (admitted, not yet drained) after the last write, in micro-units. */
  readonly levelMicro: number;
  /** Engine time of the last write: draining counts from here. */
  readonly tsMs: number;
}

/** A missing queue is an empty one, last written now. */
function storedOrEmpty(state: LeakyBucketState | undefined, nowMs: number): LeakyBucketState {
  return state ?? { levelMicro: 0, tsMs: nowMs };
}

/** The queue level at `nowMs` after lazy draining since the last write (never below 0). */
function drainedMicro(stored: LeakyBucketState, nowMs: number, limit: LeakyBucketLimit): number {
  const elapsedMs = Math.max(0, nowMs - stored.tsMs); // RL-05: a clock stepping back drains nothing
  const rateMicroPerMs = limit.ratePerS * 1000;
  return Math.max(0, stored.levelMicro - Math.floor(elapsedMs * rateMicroPerMs));
}

/** Ms from `nowMs` until `drainMicro` has drained from the stored level, counted from its last write as draining is. */
function untilDrainedMs(
  stored: LeakyBucketState,
  drainMicro: number,
  nowMs: number,
  limit: LeakyBucketLimit,
): number {
  return Math.max(0, stored.tsMs + msUntilMicro(drainMicro, limit.ratePerS * 1000) - nowMs);
}

/**
 * Queues `cost` units if they fit; the caller proceeds after `delayMs`.
 *
 * @example
 * const limit = { algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 2 } as const;
 * let d = decideLeakyBucket(undefined, 0, limit, 1); // allowed, delayMs 0
 * d = decideLeakyBucket(d.state, 0, limit, 1);       // allowed, delayMs 500
 * d = decideLeakyBucket(d.state, 0, limit, 1);       // allowed, delayMs 1000
 */
function decideLeakyBucket(
  state: LeakyBucketState | undefined,
  nowMs: number,
  limit: LeakyBucketLimit,
  cost: number,
): Decision<LeakyBucketState> {
  validateCall(limit, nowMs, cost);
  const capacityMicro = limit.queueCapacity * MICRO_PER_UNIT;
  const rateMicroPerMs = limit.ratePerS * 1000;
  const costMicro = cost * MICRO_PER_UNIT;
  const stored = storedOrEmpty(state, nowMs);
  const levelMicro = drainedMicro(stored, nowMs, limit);
  // Waits count from the last write, as draining does (floor(elapsed × rate) is not additive).
  const queueAheadMs = untilDrainedMs(stored, stored.levelMicro, nowMs, limit);
  if (levelMicro + costMicro > capacityMicro) {
    return {
      state: stored,
      allowed: false,
      remaining: Math.floor((capacityMicro - levelMicro) / MICRO_PER_UNIT),
      retryAfterMs: untilDrainedMs(stored, stored.levelMicro + costMicro - capacityMicro, nowMs, limit),
      resetMs: queueAheadMs,
      delayMs: 0,
      ttlMs: Math.max(1, queueAheadMs),
    };
  }
  const queuedMicro = levelMicro + costMicro;
  const untilEmptyMs = msUntilMicro(queuedMicro, rateMicroPerMs);
  return {
    state: { levelMicro: queuedMicro, tsMs: nowMs },
    allowed: true,
    remaining: Math.floor((capacityMicro - queuedMicro) / MICRO_PER_UNIT),
    retryAfterMs: 0,
    resetMs: untilEmptyMs,
    // Uniform output: this request goes once everything queued ahead of it has drained.
    delayMs: queueAheadMs,
    ttlMs: untilEmptyMs,
  };
}

/**
 * Takes `cost` units back out of the queue (never below empty).
 *
 * @example
 * const limit = { algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 2 } as const;
 * refundLeakyBucket({ levelMicro: 3_000_000, tsMs: 0 }, 0, limit, 1); // { levelMicro: 2_000_000, tsMs: 0 }
 */
function refundLeakyBucket(
  state: LeakyBucketState | undefined,
  nowMs: number,
  limit: LeakyBucketLimit,
  cost: number,
): LeakyBucketState {
  validateCall(limit, nowMs, cost);
  const levelMicro = drainedMicro(storedOrEmpty(state, nowMs), nowMs, limit);
  return { levelMicro: Math.max(0, levelMicro - cost * MICRO_PER_UNIT), tsMs: nowMs };
}

/**
 * The key lives until the queue has drained: an empty queue is the same as no key.
 *
 * @example
 * leakyBucketTtlMs({ levelMicro: 3_000_000, tsMs: 0 }, 0, { algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 2 }); // 1500
 */
function leakyBucketTtlMs(state: LeakyBucketState, nowMs: number, limit: LeakyBucketLimit): number {
  return Math.max(1, untilDrainedMs(state, state.levelMicro, nowMs, limit));
}

/**
 * The Redis hash of a queue.
 *
 * @example
 * leakyBucketToStored({ levelMicro: 3_000_000, tsMs: 0 }); // { kind: "hash", fields: { levelMicro: "3000000", tsMs: "0" } }
 */
function leakyBucketToStored(state: LeakyBucketState): StoredState {
  return { kind: "hash", fields: { levelMicro: String(state.levelMicro), tsMs: String(state.tsMs) } };
}

/**
 * Reads a queue back from its hash (undefined when the key is absent).
 *
 * @example
 * leakyBucketFromStored({ kind: "hash", fields: { levelMicro: "3000000", tsMs: "0" } }); // { levelMicro: 3000000, tsMs: 0 }
 */
function leakyBucketFromStored(stored: StoredState): LeakyBucketState | undefined {
  if (stored.kind !== "hash") throw new Error(`a leaky bucket is stored as a hash, got a ${stored.kind}`);
  if (Object.keys(stored.fields).length === 0) return undefined;
  const state = {
    levelMicro: readStoredInteger(stored.fields, "levelMicro"),
    tsMs: readStoredInteger(stored.fields, "tsMs"),
  };
  if (state.levelMicro < 0) throw new Error(`stored levelMicro is negative: ${state.levelMicro}`);
  return state;
}

/**
 * This key's ARGV slice for leaky-bucket-n.lua: queueCapacity, ratePerS, cost.
 *
 * @example
 * leakyBucketScriptArgs({ algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 2 }, 1); // ["10", "2", "1"]
 */
function leakyBucketScriptArgs(limit: LeakyBucketLimit, cost: number): string[] {
  return [String(limit.queueCapacity), String(limit.ratePerS), String(cost)];
}

/** leaky-bucket as the one object the registry (`algorithms.ts`) and the stores use. */
export const leakyBucket: Algorithm<LeakyBucketLimit, LeakyBucketState> = {
  name: "leaky-bucket",
  scriptName: "leaky-bucket-n.lua",
  argvStride: 3,
  decide: decideLeakyBucket,
  refund: refundLeakyBucket,
  ttlMs: leakyBucketTtlMs,
  toStored: leakyBucketToStored,
  fromStored: leakyBucketFromStored,
  scriptArgs: leakyBucketScriptArgs,
};

/**
 * Token bucket, the text's default (000 §1.3): a bucket of `capacity` tokens that
 * refills at `ratePerS`; each request spends `cost` tokens. It allows bursts up to
 * the capacity, then the average rate.
 *
 * It reproduces the text's Lua script: refill is lazy (computed from the elapsed
 * time at the next request, no timers: RL-02), elapsed is clamped at 0 so a clock
 * stepping back mints nothing (RL-05), retry = ceil((cost − tokens) / rate · 1000) ms
 * (RL-01), remaining = floor(tokens), TTL = 2 × ceil(capacity / rate · 1000) ms (RL-06).
 * Two deliberate differences, both for integer state: tokens are kept in micro-tokens
 * (the text keeps a float, which `HSET` would print with 17 digits), and a refused
 * request writes nothing — the text rewrites {tokens, ts}, which with whole micro-tokens
 * would drop the sub-micro-token refill on every refusal and starve a hammered bucket.
 *
 * Mirrored by src/store/scripts/token-bucket-n.lua.
 */
import type { Algorithm, Decision, StoredState, TokenBucketLimit } from "./algorithm.ts";
import { MICRO_PER_UNIT, msUntilMicro, validateCall } from "./algorithm.ts";
import { readStoredTimed, timedToStored } from "./stored-timed.ts";

/** The old format's hash fields (a key still holding it is read and rewritten). */
const legacyFields = ["tokensMicro", "tsMs"] as const;

export interface TokenBucketState {
  /** Tokens left after the last write, in millionths of a token. */
  readonly tokensMicro: number;
  /** Engine time of the last write: refill counts from here. */
  readonly tsMs: number;
}

/** A missing bucket is a full one, last written now. */
function storedOrFull(
  state: TokenBucketState | undefined,
  nowMs: number,
  limit: TokenBucketLimit,
): TokenBucketState {
  return state ?? { tokensMicro: limit.capacity * MICRO_PER_UNIT, tsMs: nowMs };
}

/** Tokens (in micro-tokens) at `nowMs`: the stored level plus the lazy refill since the last write, capped. */
function refilledMicro(stored: TokenBucketState, nowMs: number, limit: TokenBucketLimit): number {
  // RL-05: a clock that stepped back (failover to a primary whose clock lags) refills nothing.
  const elapsedMs = Math.max(0, nowMs - stored.tsMs);
  const rateMicroPerMs = limit.ratePerS * 1000; // the same double, in the same order, as the script
  return Math.min(
    limit.capacity * MICRO_PER_UNIT,
    stored.tokensMicro + Math.floor(elapsedMs * rateMicroPerMs),
  );
}

/**
 * Spends `cost` tokens if the bucket holds them at `nowMs`.
 *
 * @example
 * const limit = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 } as const;
 * let d = decideTokenBucket(undefined, 0, limit, 1); // allowed, remaining 4
 * for (let i = 0; i < 4; i++) d = decideTokenBucket(d.state, 0, limit, 1); // remaining 0
 * decideTokenBucket(d.state, 0, limit, 1); // refused, retryAfterMs 2000
 */
function decideTokenBucket(
  state: TokenBucketState | undefined,
  nowMs: number,
  limit: TokenBucketLimit,
  cost: number,
): Decision<TokenBucketState> {
  validateCall(limit, nowMs, cost);
  const capacityMicro = limit.capacity * MICRO_PER_UNIT;
  const rateMicroPerMs = limit.ratePerS * 1000;
  const costMicro = cost * MICRO_PER_UNIT;
  const stored = storedOrFull(state, nowMs, limit);
  const tokensMicro = refilledMicro(stored, nowMs, limit);
  const ttlMs = tokenBucketTtlMs(stored, nowMs, limit);
  if (tokensMicro < costMicro) {
    // The text's ceil((cost − tokens) / rate · 1000), counted from the last write as the refill
    // is: floor(elapsed × rate) is not additive, so counting from now could promise 1 ms early.
    return {
      state: stored,
      allowed: false,
      remaining: Math.floor(tokensMicro / MICRO_PER_UNIT),
      retryAfterMs: stored.tsMs + msUntilMicro(costMicro - stored.tokensMicro, rateMicroPerMs) - nowMs,
      resetMs: stored.tsMs + msUntilMicro(capacityMicro - stored.tokensMicro, rateMicroPerMs) - nowMs,
      delayMs: 0,
      ttlMs,
    };
  }
  const leftMicro = tokensMicro - costMicro;
  return {
    state: { tokensMicro: leftMicro, tsMs: nowMs },
    allowed: true,
    remaining: Math.floor(leftMicro / MICRO_PER_UNIT),
    retryAfterMs: 0,
    resetMs: msUntilMicro(capacityMicro - leftMicro, rateMicroPerMs),
    delayMs: 0,
    ttlMs,
  };
}

/**
 * Gives `cost` tokens back (capped at capacity): compensates a spend when another
 * limit of the same request refused it.
 *
 * @example
 * const limit = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 } as const;
 * const spent = decideTokenBucket(undefined, 0, limit, 2).state; // 3 tokens
 * refundTokenBucket(spent, 0, limit, 2); // { tokensMicro: 5_000_000, tsMs: 0 }
 */
function refundTokenBucket(
  state: TokenBucketState | undefined,
  nowMs: number,
  limit: TokenBucketLimit,
  cost: number,
): TokenBucketState {
  validateCall(limit, nowMs, cost);
  const capacityMicro = limit.capacity * MICRO_PER_UNIT;
  const refilled = refilledMicro(storedOrFull(state, nowMs, limit), nowMs, limit);
  const tokensMicro = Math.min(capacityMicro, refilled + cost * MICRO_PER_UNIT);
  return { tokensMicro, tsMs: nowMs };
}

/**
 * RL-06: the text's PEXPIRE, 2 × the time to refill completely. By then a bucket is
 * full again, exactly like a missing one, so expiry changes no decision.
 *
 * @example
 * tokenBucketTtlMs({ tokensMicro: 0, tsMs: 0 }, 0, { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }); // 20000
 */
function tokenBucketTtlMs(_state: TokenBucketState, _nowMs: number, limit: TokenBucketLimit): number {
  return twiceFullRefillMs(limit);
}

function twiceFullRefillMs(limit: TokenBucketLimit): number {
  return Math.ceil((limit.capacity / limit.ratePerS) * 1000) * 2;
}

/**
 * The Redis form of a bucket (issue 15): tokensMicro alone, an integer (Redis keeps it inside
 * the object), and tsMs carried by the key's absolute expiry, tsMs + the TTL (RL-06's 2 × a
 * full refill, a constant of the limit; stored-timed.ts): read back as PEXPIRETIME − the TTL.
 *
 * @example
 * tokenBucketToStored({ tokensMicro: 4_000_000, tsMs: 1_000 }, { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 });
 * // { kind: "string", value: "4000000", expiresAtMs: 21000 }
 */
function tokenBucketToStored(state: TokenBucketState, limit: TokenBucketLimit): StoredState {
  return timedToStored(state.tokensMicro, state.tsMs, twiceFullRefillMs(limit));
}

/**
 * Reads a bucket back from its integer and its key's expiry, or from an older format, the
 * string "tokensMicro:tsMs" or a hash {tokensMicro, tsMs} (undefined when the key is absent).
 *
 * @example
 * const limit = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 } as const;
 * tokenBucketFromStored({ kind: "string", value: "4000000", expiresAtMs: 21_000 }, limit); // { tokensMicro: 4000000, tsMs: 1000 }
 * tokenBucketFromStored({ kind: "string", value: "4000000:1000" }, limit); // { tokensMicro: 4000000, tsMs: 1000 }
 */
function tokenBucketFromStored(stored: StoredState, limit: TokenBucketLimit): TokenBucketState | undefined {
  const timed = readStoredTimed(stored, legacyFields, "tsMs", twiceFullRefillMs(limit));
  if (timed === undefined) return undefined;
  const state = { tokensMicro: timed[0], tsMs: timed[1] };
  if (state.tokensMicro < 0) throw new Error(`stored tokensMicro is negative: ${state.tokensMicro}`);
  return state;
}

/**
 * This key's ARGV slice for token-bucket-n.lua: capacity, ratePerS, cost.
 *
 * @example
 * tokenBucketScriptArgs({ algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }, 1); // ["5", "0.5", "1"]
 */
function tokenBucketScriptArgs(limit: TokenBucketLimit, cost: number): string[] {
  return [String(limit.capacity), String(limit.ratePerS), String(cost)];
}

/** token-bucket as the one object the registry (`algorithms.ts`) and the stores use. */
export const tokenBucket: Algorithm<TokenBucketLimit, TokenBucketState> = {
  name: "token-bucket",
  scriptName: "token-bucket-n.lua",
  argvStride: 3,
  decide: decideTokenBucket,
  refund: refundTokenBucket,
  ttlMs: tokenBucketTtlMs,
  toStored: tokenBucketToStored,
  fromStored: tokenBucketFromStored,
  scriptArgs: tokenBucketScriptArgs,
};

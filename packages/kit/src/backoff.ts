/**
 * Exponential backoff with a cap, jitter and a deadline budget (seed 003,
 * "Retentativas com crescimento exponencial limitado"): for attempt n starting at
 * one, delay = min(cap, base · 2^(n−1)). The text adds what production needs on top:
 * jitter, because deterministic retries from many clients synchronise into spikes,
 * and a total deadline budget, because more retries are not always better.
 *
 * @example
 * const policy = new BackoffPolicy({ baseMs: 2_000, capMs: 300_000, jitter: "full", random, budgetMs: 86_400_000 });
 * const decision = policy.next(attempt, clock.monotonicMs() - firstAttemptAtMs);
 * if (decision.retry) schedule(decision.delayMs); else markDead(decision.reason);
 */
import type { RandomSource } from "./random.ts";

/**
 * How a delay is randomised (the AWS Architecture Blog's names):
 * - `none`: exactly the exponential delay — only for tests and single clients;
 * - `full`: uniform in [0, delay) — spreads retries the most;
 * - `equal`: uniform in [delay/2, delay) — spreads them while keeping a floor.
 */
export type JitterMode = "none" | "full" | "equal";

function requireAttempt(attempt: number): void {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`attempt must be an integer >= 1 (attempts start at one), got ${attempt}`);
  }
}

function requirePositiveFinite(name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive finite number, got ${value}`);
  }
}

function requireBaseAndCap(baseMs: number, capMs: number): void {
  requirePositiveFinite("baseMs", baseMs);
  requirePositiveFinite("capMs", capMs);
  if (capMs < baseMs) throw new RangeError(`capMs (${capMs}) must be >= baseMs (${baseMs})`);
}

/**
 * The number of doublings after which base · 2^k has certainly reached the cap.
 * Capping the exponent with it (the seed caps it by `teto.bit_length() + 2`) means
 * attempt 10^6 costs what attempt 10 costs and 2^(n−1) never overflows to Infinity.
 * Computed from logarithms so cap/base itself cannot overflow; +1 absorbs log2 rounding.
 */
function maxDoublings(baseMs: number, capMs: number): number {
  return Math.max(0, Math.ceil(Math.log2(capMs) - Math.log2(baseMs)) + 1);
}

/**
 * The capped exponential delay before retrying after attempt `attempt` fails:
 * min(capMs, baseMs · 2^(attempt−1)), exact (scaling by a power of two is lossless).
 *
 * @example
 * [1, 2, 3, 4, 5, 6].map((n) => backoffDelayMs(n, 2, 300)); // [2, 4, 8, 16, 32, 64]
 * backoffDelayMs(30, 2, 300);                                // 300
 */
export function backoffDelayMs(attempt: number, baseMs: number, capMs: number): number {
  requireAttempt(attempt);
  requireBaseAndCap(baseMs, capMs);
  return cappedDelayMs(attempt, baseMs, capMs, maxDoublings(baseMs, capMs));
}

function cappedDelayMs(attempt: number, baseMs: number, capMs: number, doublingsMax: number): number {
  let doublings = Math.min(attempt - 1, doublingsMax);
  // 2^k is Infinity past k = 1023; a subnormal base under a huge cap needs up to ~2100
  // doublings, so scale in steps (at most three, since doublingsMax <= 2100).
  let scaled = baseMs;
  while (doublings > 0) {
    const step = Math.min(doublings, 1023);
    scaled *= 2 ** step;
    doublings -= step;
  }
  return Math.min(capMs, scaled);
}

/**
 * Randomises `delayMs` by `mode` with the injected source: full → [0, delay),
 * equal → [delay/2, delay), none → delay.
 *
 * @example
 * jitterDelayMs(64, "equal", seededRandom(1)); // somewhere in [32, 64)
 */
export function jitterDelayMs(delayMs: number, mode: JitterMode, random: RandomSource): number {
  if (!(delayMs >= 0) || !Number.isFinite(delayMs)) {
    throw new RangeError(`delayMs must be a finite number >= 0, got ${delayMs}`);
  }
  switch (mode) {
    case "none":
      return delayMs;
    case "full":
      return random.next() * delayMs;
    case "equal":
      return delayMs / 2 + random.next() * (delayMs / 2);
    default:
      throw new RangeError(`jitter must be none, full or equal, got ${String(mode)}`);
  }
}

interface BackoffBounds {
  /** Delay after the first failed attempt, in ms. */
  baseMs: number;
  /** Largest delay ever returned, in ms. */
  capMs: number;
  /**
   * Total time budget from the first attempt's start, in ms: no retry is scheduled
   * whose start would fall after it (seed 003: retries stop within the retention window).
   */
  budgetMs?: number;
  /** Most attempts in total, the first one included. */
  maxAttempts?: number;
}

/** Options of a BackoffPolicy; a random source is required exactly when jitter needs one. */
export type BackoffOptions = BackoffBounds &
  ({ jitter: "none"; random?: RandomSource } | { jitter: "full" | "equal"; random: RandomSource });

/** What to do after a failed attempt: wait `delayMs` and retry, or stop for `reason`. */
export type BackoffDecision =
  | { readonly retry: true; readonly delayMs: number }
  | { readonly retry: false; readonly reason: "max-attempts" | "budget-exhausted" };

/**
 * A retry policy: capped exponential delay, jitter, a deadline budget and an
 * attempt limit, validated once at construction.
 *
 * @example
 * const policy = new BackoffPolicy({ baseMs: 100, capMs: 10_000, jitter: "equal", random: seededRandom(1), maxAttempts: 5 });
 * policy.next(1, 0);      // { retry: true, delayMs: 50..100 }
 * policy.next(5, 12_000); // { retry: false, reason: "max-attempts" }
 */
export class BackoffPolicy {
  readonly baseMs: number;
  readonly capMs: number;
  readonly jitter: JitterMode;
  readonly budgetMs: number;
  readonly maxAttempts: number;
  readonly #random: RandomSource | undefined;
  readonly #doublingsMax: number;

  constructor(options: BackoffOptions) {
    requireBaseAndCap(options.baseMs, options.capMs);
    if (!["none", "full", "equal"].includes(options.jitter)) {
      throw new RangeError(`jitter must be none, full or equal, got ${String(options.jitter)}`);
    }
    if (options.jitter !== "none" && options.random === undefined) {
      throw new TypeError(`jitter "${options.jitter}" needs a random source`);
    }
    if (options.budgetMs !== undefined) requirePositiveFinite("budgetMs", options.budgetMs);
    if (
      options.maxAttempts !== undefined &&
      (!Number.isInteger(options.maxAttempts) || options.maxAttempts < 1)
    ) {
      throw new RangeError(`maxAttempts must be an integer >= 1, got ${options.maxAttempts}`);
    }
    this.baseMs = options.baseMs;
    this.capMs = options.capMs;
    this.jitter = options.jitter;
    this.budgetMs = options.budgetMs ?? Number.POSITIVE_INFINITY;
    this.maxAttempts = options.maxAttempts ?? Number.POSITIVE_INFINITY;
    this.#random = options.random;
    this.#doublingsMax = maxDoublings(options.baseMs, options.capMs);
  }

  /** The (jittered) delay to wait after attempt `attempt` fails, ignoring budget and limit. */
  delayMs(attempt: number): number {
    requireAttempt(attempt);
    const delayMs = cappedDelayMs(attempt, this.baseMs, this.capMs, this.#doublingsMax);
    // #random is only undefined with jitter "none", checked in the constructor.
    return this.jitter === "none" ? delayMs : jitterDelayMs(delayMs, this.jitter, this.#random!);
  }

  /**
   * Decides after attempt `attempt` (1 = the first call) failed, `elapsedMs` after
   * the first attempt started: retry after a delay, or give up because the attempt
   * limit is reached or the retry would start after the budget ends.
   */
  next(attempt: number, elapsedMs: number): BackoffDecision {
    requireAttempt(attempt);
    if (!Number.isFinite(elapsedMs) || elapsedMs < 0) {
      throw new RangeError(`elapsedMs must be a finite number >= 0, got ${elapsedMs}`);
    }
    if (attempt >= this.maxAttempts) return { retry: false, reason: "max-attempts" };
    const delayMs = this.delayMs(attempt);
    if (elapsedMs + delayMs > this.budgetMs) return { retry: false, reason: "budget-exhausted" };
    return { retry: true, delayMs };
  }
}

/**
 * When to try a failed delivery again (WH-17, WH-18, WH-23, WH-25): the text's capped
 * exponential delay, min(cap, base · 2^(n−1)), plus what it says production needs —
 * jitter, so that deliveries failing together do not retry together; a total deadline
 * (the retention window, 24 h by default), never crossed; a bound on attempts; and the
 * receiver's own Retry-After, honoured within a bound. The exponential itself is kit's
 * backoff; this file adds the deadline measured from the delivery's creation (not its
 * first attempt: a delivery queued for an hour has an hour less to live).
 *
 * @example
 * const policy = new RetryPolicy({ random: seededRandom("test") });
 * policy.next({ attempt: 1, nowMs, createdAtMs }); // { retry: true, atMs: nowMs + 1000..2000, delayMs }
 * policy.next({ attempt: 9, nowMs: createdAtMs + policy.deadlineMs }); // { retry: false, reason: "deadline" }
 */
import { BackoffPolicy, backoffDelayMs, type JitterMode } from "@casebook/kit/backoff";
import type { RandomSource } from "@casebook/kit/random";
import { DEFAULT_MAX_RETRY_AFTER_MS } from "./retry-after.ts";

/** The text's example: base 2 s, cap 300 s. */
export const DEFAULT_RETRY_BASE_MS = 2_000;
export const DEFAULT_RETRY_CAP_MS = 300_000;
/** WH-02: retry and retention window of at most 24 h. */
export const DEFAULT_DEADLINE_MS = 86_400_000;
/**
 * Attempts in total, the first included. At a 300 s cap with equal jitter (mean 225 s) a
 * 24 h deadline allows about 390, so the deadline ends a delivery first; this bound
 * catches a misconfigured deadline or cap.
 */
export const DEFAULT_MAX_ATTEMPTS = 1_000;

/**
 * The text's function, in whole seconds as the text writes it (WH-17): integer n ≥ 1,
 * positive integer base and cap; the exponent is capped so n = 10^9 costs nothing.
 *
 * @example
 * [1, 2, 3, 4, 5, 6].map((n) => retryDelayS(n)); // [2, 4, 8, 16, 32, 64]
 * retryDelayS(30);                               // 300
 * retryDelayS(0);                                // throws RangeError
 */
export function retryDelayS(attempt: number, baseS = 2, capS = 300): number {
  if (!Number.isSafeInteger(baseS) || !Number.isSafeInteger(capS) || baseS <= 0 || capS <= 0) {
    throw new RangeError(`base and cap must be positive whole seconds, got ${baseS} and ${capS}`);
  }
  // kit requires cap >= base; the text's min(cap, …) simply returns cap when it is smaller.
  return Math.min(capS, backoffDelayMs(attempt, baseS, Math.max(baseS, capS)));
}

export interface RetryPolicyOptions {
  baseMs?: number;
  capMs?: number;
  /** Default "equal": spreads retries while keeping half the delay as a floor. */
  jitter?: JitterMode;
  /** Required: production passes systemRandom, tests a seeded source (WH-25). */
  random: RandomSource;
  deadlineMs?: number;
  maxAttempts?: number;
  /** Largest Retry-After honoured, in ms. */
  retryAfterMaxMs?: number;
}

export type RetryDecision =
  | { readonly retry: true; readonly atMs: number; readonly delayMs: number }
  | { readonly retry: false; readonly reason: "deadline" | "max-attempts" };

export class RetryPolicy {
  readonly deadlineMs: number;
  readonly maxAttempts: number;
  readonly retryAfterMaxMs: number;
  readonly #backoff: BackoffPolicy;

  constructor(options: RetryPolicyOptions) {
    this.deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
    this.maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    this.retryAfterMaxMs = options.retryAfterMaxMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
    if (!(this.deadlineMs > 0) || !Number.isFinite(this.deadlineMs))
      throw new RangeError("deadlineMs must be > 0");
    if (!Number.isSafeInteger(this.maxAttempts) || this.maxAttempts < 1)
      throw new RangeError("maxAttempts >= 1");
    if (!(this.retryAfterMaxMs >= 0)) throw new RangeError("retryAfterMaxMs must be >= 0");
    this.#backoff = new BackoffPolicy({
      baseMs: options.baseMs ?? DEFAULT_RETRY_BASE_MS,
      capMs: options.capMs ?? DEFAULT_RETRY_CAP_MS,
      jitter: options.jitter ?? "equal",
      random: options.random,
    });
  }

  /** The last instant an attempt of a delivery created at `createdAtMs` may start. */
  deadlineAtMs(createdAtMs: number): number {
    return createdAtMs + this.deadlineMs;
  }

  /**
   * After attempt `attempt` (1 = the first) failed at `nowMs`: when to try again, or why
   * not. A Retry-After wait (already bounded by retry-after.ts) lengthens the delay, never
   * shortens it: the backoff still spreads a herd the receiver asked to come back "now".
   */
  next(input: { attempt: number; nowMs: number; createdAtMs: number; retryAfterMs?: number }): RetryDecision {
    if (input.attempt >= this.maxAttempts) return { retry: false, reason: "max-attempts" };
    const backoffMs = this.#backoff.delayMs(input.attempt);
    const askedMs = Math.min(this.retryAfterMaxMs, Math.max(0, input.retryAfterMs ?? 0));
    const delayMs = Math.max(backoffMs, askedMs);
    const atMs = input.nowMs + delayMs;
    if (atMs > this.deadlineAtMs(input.createdAtMs)) return { retry: false, reason: "deadline" };
    return { retry: true, atMs, delayMs };
  }
}

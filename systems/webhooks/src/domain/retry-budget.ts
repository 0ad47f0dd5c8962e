/**
 * A retry budget (WH-20): over a sliding window, retries may be at most `retryFraction`
 * of all attempts. The text's recovery has 500 attempts/s of capacity, 350/s of new
 * work and a 150/s margin to drain the backlog; 200 extra retries/s eat the margin and
 * the backlog grows. Capping retries at 20% of attempts leaves new work and draining at
 * least 80% of the capacity, whatever the receivers do.
 *
 * Token-bucket view: each first attempt deposits f/(1−f) tokens, each retry spends one,
 * and tokens older than the window expire. A floor (`minRetriesPerS`) keeps retries
 * moving when there is no new work at all, where any fraction of zero is zero. Denied
 * retries are deferred by the caller, never dropped: the deadline still governs them.
 * Counts live in a ring of `slots` buckets, so memory and each call are O(slots).
 *
 * @example
 * const budget = new RetryBudget({ retryFraction: 0.2, windowMs: 10_000, nowMs: clock.monotonicMs() });
 * budget.recordFirstAttempt(clock.monotonicMs());
 * if (!budget.tryRetry(clock.monotonicMs())) deferRetry(delivery);
 */

export interface RetryBudgetOptions {
  /** Most retries as a fraction of all attempts in the window, in (0, 1). */
  retryFraction: number;
  /** Window length, in ms. */
  windowMs?: number;
  /** Buckets in the window: its time resolution is windowMs / slots. */
  slots?: number;
  /** Retries per second always allowed on top of the fraction. */
  minRetriesPerS?: number;
  nowMs: number;
}

export const DEFAULT_BUDGET_WINDOW_MS = 10_000;
export const DEFAULT_BUDGET_SLOTS = 10;
export const DEFAULT_BUDGET_MIN_RETRIES_PER_S = 1;
// 0.2 · 400 is 80.00000000000001 in binary floating point; an allowance is a count.
const COUNT_EPSILON = 1e-9;

export class RetryBudget {
  readonly retryFraction: number;
  readonly windowMs: number;
  readonly minRetriesPerS: number;
  readonly #slotMs: number;
  readonly #first: Float64Array;
  readonly #retries: Float64Array;
  #slot: number;
  #firstTotal = 0;
  #retriesTotal = 0;

  constructor(options: RetryBudgetOptions) {
    const f = options.retryFraction;
    if (!(f > 0 && f < 1)) throw new RangeError(`retryFraction must be in (0, 1), got ${f}`);
    this.retryFraction = f;
    this.windowMs = options.windowMs ?? DEFAULT_BUDGET_WINDOW_MS;
    const slots = options.slots ?? DEFAULT_BUDGET_SLOTS;
    if (!Number.isSafeInteger(slots) || slots < 1 || slots > 1_000)
      throw new RangeError("slots must be 1..1000");
    if (!(this.windowMs >= slots)) throw new RangeError("windowMs must be >= slots (1 ms per slot at least)");
    this.minRetriesPerS = options.minRetriesPerS ?? DEFAULT_BUDGET_MIN_RETRIES_PER_S;
    if (!(this.minRetriesPerS >= 0)) throw new RangeError("minRetriesPerS must be >= 0");
    this.#slotMs = this.windowMs / slots;
    this.#first = new Float64Array(slots);
    this.#retries = new Float64Array(slots);
    this.#slot = Math.floor(options.nowMs / this.#slotMs);
  }

  /** Counts `count` first attempts (new work and backlog): each earns retry allowance. */
  recordFirstAttempt(nowMs: number, count = 1): void {
    const i = this.#advance(nowMs);
    this.#first[i]! += count;
    this.#firstTotal += count;
  }

  /** Retries that may start now without breaking the fraction. */
  allowance(nowMs: number): number {
    this.#advance(nowMs);
    const f = this.retryFraction;
    const floor = (this.minRetriesPerS * this.windowMs) / 1_000;
    // R + k ≤ f·(F + R + k) + floor  ⇔  R + k ≤ (f·F + floor) / (1 − f)
    const ceiling = Math.floor((f * this.#firstTotal + floor) / (1 - f) + COUNT_EPSILON);
    return Math.max(0, ceiling - this.#retriesTotal);
  }

  /** Takes one retry from the budget if there is room; false means defer it. */
  tryRetry(nowMs: number): boolean {
    if (this.allowance(nowMs) < 1) return false;
    const i = this.#advance(nowMs);
    this.#retries[i]! += 1;
    this.#retriesTotal += 1;
    return true;
  }

  /** Attempts counted in the current window, for metrics and tests. */
  window(nowMs: number): { firstAttempts: number; retries: number } {
    this.#advance(nowMs);
    return { firstAttempts: this.#firstTotal, retries: this.#retriesTotal };
  }

  /** Moves the ring to `nowMs`, expiring slots that left the window; returns the current slot. */
  #advance(nowMs: number): number {
    const slots = this.#first.length;
    const target = Math.floor(nowMs / this.#slotMs);
    // A clock stepping back counts into the current slot rather than rewriting history.
    const steps = Math.min(slots, Math.max(0, target - this.#slot));
    for (let s = 1; s <= steps; s++) {
      const i = (((this.#slot + s) % slots) + slots) % slots;
      this.#firstTotal -= this.#first[i]!;
      this.#retriesTotal -= this.#retries[i]!;
      this.#first[i] = 0;
      this.#retries[i] = 0;
    }
    this.#slot = Math.max(this.#slot, target);
    return ((this.#slot % slots) + slots) % slots;
  }
}

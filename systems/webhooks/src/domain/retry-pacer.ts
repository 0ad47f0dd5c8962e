/**
 * Where a retry goes when the retry budget says "not now" (WH-20). The budget admits
 * about `admitPerWindow` retries per window; when D retries have already been turned down
 * in the current window, the next one would wait about D / admitPerWindow windows for its
 * turn. Deferring it by that much (jittered ×0.5–1.5) spreads a storm over the time the
 * budget needs to let it through, so deferred retries come back at roughly the rate they
 * can be admitted — instead of all returning a moment later to be claimed, checked and
 * deferred again. Bounded by `maxDeferMs`: the delivery's deadline still governs (a
 * deferral that reaches it ends the delivery as expired).
 *
 * @example
 * const pacer = new RetryPacer({ windowMs: 10_000, maxDeferMs: 900_000, random });
 * pacer.deferMs(nowMs, 25); // ~5–15 s for the first denials of a window, longer as they pile up
 */
import type { RandomSource } from "@casebook/kit/random";

/** Default bound on one deferral: 15 minutes. */
export const DEFAULT_MAX_RETRY_DEFER_MS = 900_000;

export class RetryPacer {
  readonly #windowMs: number;
  readonly #maxDeferMs: number;
  readonly #random: RandomSource;
  #windowStartMs = Number.NEGATIVE_INFINITY;
  #denied = 0;

  constructor(options: { windowMs: number; maxDeferMs?: number; random: RandomSource }) {
    if (!(options.windowMs > 0) || !Number.isFinite(options.windowMs))
      throw new RangeError("windowMs must be > 0");
    this.#windowMs = options.windowMs;
    this.#maxDeferMs = options.maxDeferMs ?? DEFAULT_MAX_RETRY_DEFER_MS;
    if (!(this.#maxDeferMs >= options.windowMs)) throw new RangeError("maxDeferMs must be >= windowMs");
    this.#random = options.random;
  }

  /** The delay for one more denied retry at `nowMs`, given how many the budget admits per window. */
  deferMs(nowMs: number, admitPerWindow: number): number {
    if (nowMs - this.#windowStartMs >= this.#windowMs || nowMs < this.#windowStartMs) {
      this.#windowStartMs = nowMs;
      this.#denied = 0;
    }
    this.#denied += 1;
    const windows = Math.max(1, this.#denied / Math.max(1, admitPerWindow));
    const jitter = 0.5 + this.#random.next();
    return Math.round(Math.min(this.#maxDeferMs, this.#windowMs * windows * jitter));
  }

  /** Retries turned down in the current window. */
  get denied(): number {
    return this.#denied;
  }
}

/**
 * The rollup worker (US-15): every `intervalMs` it adds the clicks appended since its last
 * round to their hourly and daily buckets (click-store.ts `rollup`: each click once, whenever
 * it was flushed, so the rollup agrees with the raw log), in rounds of at most
 * ROLLUP_MAX_ROWS pending rows — a full round is followed by the next at once. On kit's
 * BackgroundLoop.
 *
 * @example
 * const rollup = new ClickRollup({ store, clock, intervalMs: 10_000, onError });
 * rollup.start(); await rollup.runOnce(); await rollup.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { type ClickStore, ROLLUP_MAX_ROWS } from "../store/click-store.ts";

export interface ClickRollupOptions {
  store: ClickStore;
  clock: Clock;
  intervalMs: number;
  /** Pending rows a round takes at most (default ROLLUP_MAX_ROWS). */
  maxRows?: number;
  onError: (error: unknown) => void;
}

export class ClickRollup {
  readonly #options: ClickRollupOptions;
  readonly #loop: BackgroundLoop;

  constructor(options: ClickRollupOptions) {
    this.#options = options;
    this.#loop = new BackgroundLoop({
      name: "click rollup",
      round: async () => (await this.#round()) >= this.#maxRows,
      idleMs: options.intervalMs,
      failureBackoff: { capMs: Math.max(options.intervalMs, 30_000), jitter: "none" },
      onError: (error) => options.onError(error),
    });
  }

  /** Rolls up everything pending now (rounds until one is not full): shutdown's last word, and tests'. */
  async runOnce(): Promise<void> {
    while ((await this.#round()) >= this.#maxRows) {}
  }

  get #maxRows(): number {
    return this.#options.maxRows ?? ROLLUP_MAX_ROWS;
  }

  #round(): Promise<number> {
    return this.#options.store.rollup(this.#options.clock.nowMs(), this.#maxRows);
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}

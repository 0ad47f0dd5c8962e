/**
 * The rollup worker (US-15): every `intervalMs` it recomputes the hourly and daily click
 * buckets of the last `windowMs` from the raw log (click-store.ts `rollup`, idempotent), so
 * clicks flushed late still land in their bucket, and the rollup agrees with the raw log. On
 * kit's BackgroundLoop.
 *
 * @example
 * const rollup = new ClickRollup({ store, clock, intervalMs: 10_000, windowMs: 2 * 3_600_000, onError });
 * rollup.start(); await rollup.runOnce(); await rollup.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { ClickStore } from "../store/click-store.ts";

export interface ClickRollupOptions {
  store: ClickStore;
  clock: Clock;
  intervalMs: number;
  /** How far back each round recomputes: longer than any flush delay. */
  windowMs: number;
  onError: (error: unknown) => void;
}

export class ClickRollup {
  readonly #options: ClickRollupOptions;
  readonly #loop: BackgroundLoop;

  constructor(options: ClickRollupOptions) {
    this.#options = options;
    this.#loop = new BackgroundLoop({
      name: "click rollup",
      round: async () => {
        await this.runOnce();
        return false;
      },
      idleMs: options.intervalMs,
      failureBackoff: { capMs: Math.max(options.intervalMs, 30_000), jitter: "none" },
      onError: (error) => options.onError(error),
    });
  }

  async runOnce(): Promise<void> {
    const nowMs = this.#options.clock.nowMs();
    await this.#options.store.rollup(nowMs - this.#options.windowMs, nowMs + 1);
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}

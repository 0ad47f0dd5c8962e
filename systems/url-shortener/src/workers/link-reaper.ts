/**
 * The reaper (US-12): PostgreSQL has no TTL, so expired links are deleted by this loop in
 * bounded batches (`maxBatch` rows a statement; a full batch runs the next at once). The read
 * path never waits for it: it filters on `expires_at` itself (domain/redirect-decision.ts), so
 * an expired link answers 410 from the second it expires, and 404 once reaped.
 *
 * @example
 * const reaper = new LinkReaper({ links, clock, intervalMs: 60_000, maxBatch: 1_000, onError, onReaped });
 * reaper.start(); … await reaper.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { LinkRepository } from "../store/link-repository.ts";

export interface LinkReaperOptions {
  links: LinkRepository;
  clock: Clock;
  intervalMs: number;
  maxBatch: number;
  onError: (error: unknown) => void;
  onReaped?: (count: number) => void;
}

export class LinkReaper {
  readonly #loop: BackgroundLoop;
  readonly #options: LinkReaperOptions;

  constructor(options: LinkReaperOptions) {
    this.#options = options;
    this.#loop = new BackgroundLoop({
      name: "link reaper",
      round: async () => (await this.runOnce()) === options.maxBatch,
      idleMs: options.intervalMs,
      failureBackoff: { capMs: Math.max(options.intervalMs, 30_000), jitter: "none" },
      onError: (error) => options.onError(error),
    });
  }

  /** One batch: the links expired by now, at most maxBatch. */
  async runOnce(): Promise<number> {
    const count = await this.#options.links.reapExpired(this.#options.clock.nowMs(), this.#options.maxBatch);
    if (count > 0) this.#options.onReaped?.(count);
    return count;
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}

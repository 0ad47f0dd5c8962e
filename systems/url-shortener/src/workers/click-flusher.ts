/**
 * The flusher (US-15): takes batches of at most `maxBatch` entries (a visit, or repeats of it
 * folded by the buffer) from the bounded buffer,
 * has them turned into click records (user-agent family, bot flag, visitor hash) by the
 * encoder — a worker thread (click-encoder.ts), so none of it runs on the redirect's event
 * loop — and appends each batch with ONE insert, on kit's BackgroundLoop: a full batch runs
 * the next at once, otherwise it waits `intervalMs`. A batch the store refuses goes back to
 * the buffer's front while there is room (the rest is dropped and counted). `stop()` ends the
 * loop and then flushes what is left (graceful shutdown: nothing buffered is lost when the
 * store is up), bounded by the buffer's size.
 *
 * @example
 * const flusher = new ClickFlusher({ buffer, store, encoder, maxBatch: 5_000, intervalMs: 1_000, onError, onFlushed });
 * flusher.start(); … await flusher.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { ClickBuffer } from "../domain/click-buffer.ts";
import type { ClickBatch } from "../store/click-batch.ts";
import type { ClickEncoding } from "./click-encoder.ts";

export interface ClickAppender {
  appendBatch(batch: ClickBatch): Promise<void>;
}

export interface ClickFlusherOptions {
  buffer: ClickBuffer;
  store: ClickAppender;
  /** Visits → the INSERT's parameters, off the event loop (click-encoder.ts). */
  encoder: Pick<ClickEncoding, "encode">;
  maxBatch: number;
  intervalMs: number;
  onError: (error: unknown) => void;
  onFlushed?: (count: number) => void;
  onDropped?: (count: number) => void;
}

export class ClickFlusher {
  readonly #options: ClickFlusherOptions;
  readonly #loop: BackgroundLoop;
  #flushed = 0;
  #batches = 0;

  constructor(options: ClickFlusherOptions) {
    this.#options = options;
    this.#loop = new BackgroundLoop({
      name: "click flusher",
      // A full batch (maxBatch entries) runs the next at once.
      round: async () => (await this.#flush()).entries === options.maxBatch,
      idleMs: options.intervalMs,
      failureBackoff: { capMs: Math.max(options.intervalMs, 10_000), jitter: "none" },
      onError: (error) => options.onError(error),
    });
  }

  get stats() {
    return { flushed: this.#flushed, batches: this.#batches };
  }

  /** One batch: returns how many clicks were written (0 when the buffer was empty). */
  async flushOnce(): Promise<number> {
    return (await this.#flush()).clicks;
  }

  async #flush(): Promise<{ entries: number; clicks: number }> {
    const { buffer, store, encoder, maxBatch } = this.#options;
    const batch = buffer.take(maxBatch);
    if (batch.length === 0) return { entries: 0, clicks: 0 };
    let clicks = 0;
    for (const visit of batch) clicks += visit.count ?? 1;
    try {
      await store.appendBatch(await encoder.encode(batch));
    } catch (error) {
      const lost = buffer.putBack(batch);
      if (lost > 0) this.#options.onDropped?.(lost);
      throw error;
    }
    this.#flushed += clicks;
    this.#batches += 1;
    this.#options.onFlushed?.(clicks);
    return { entries: batch.length, clicks };
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops the loop, then writes what is still buffered (at most buffer.maxEntries / maxBatch batches). */
  async stop(): Promise<void> {
    await this.#loop.stop();
    const rounds = Math.ceil(this.#options.buffer.maxEntries / this.#options.maxBatch) + 1;
    for (let i = 0; i < rounds && this.#options.buffer.size > 0; i++) await this.flushOnce();
  }
}

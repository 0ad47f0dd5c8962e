/**
 * Group commit (and group read) for a worker's statements (WH-10): many sends start and
 * finish at about the same time, and each needs its own re-check before and its own CAS
 * write after. One by one they cost a round trip each; here the first item goes out at
 * once, and the items that arrive while that statement is in flight go out together in the
 * next one — no timer, no added latency when idle, batches as large as the load makes them
 * (up to `maxBatch`). Each caller gets its own item's answer; a failed batch rejects every
 * caller in it (their leases stay, and expire).
 *
 * @example
 * const writer = new Batcher((batch) => recordAttempts(db, batch, clock.nowMs()), { maxBatch: 500, maxPending: 2_000 });
 * const write = await writer.submit(result); // { won: true, … }
 */

interface Pending<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (error: unknown) => void;
}

export interface BatcherOptions {
  /** Items per write. */
  maxBatch: number;
  /** Items waiting at once; more is a caller bug (each in-flight delivery submits one). */
  maxPending: number;
}

export class Batcher<I, O> {
  readonly #write: (batch: I[]) => Promise<O[]>;
  readonly #maxBatch: number;
  readonly #maxPending: number;
  #pending: Pending<I, O>[] = [];
  #flushing: Promise<void> | undefined;

  constructor(write: (batch: I[]) => Promise<O[]>, options: BatcherOptions) {
    for (const name of ["maxBatch", "maxPending"] as const) {
      if (!Number.isSafeInteger(options[name]) || options[name] < 1)
        throw new RangeError(`${name} must be >= 1`);
    }
    this.#write = write;
    this.#maxBatch = options.maxBatch;
    this.#maxPending = options.maxPending;
  }

  /** Queues `item` for the next write; resolves with its own output. */
  submit(item: I): Promise<O> {
    if (this.#pending.length >= this.#maxPending) {
      return Promise.reject(new RangeError(`more than ${this.#maxPending} writes pending`));
    }
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      this.#flushing ??= this.#flush().finally(() => {
        this.#flushing = undefined;
      });
    });
  }

  /** Resolves once everything submitted so far is written (or failed). */
  async drain(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, this.#maxBatch);
      try {
        const outs = await this.#write(batch.map((p) => p.item));
        if (outs.length !== batch.length) throw new Error(`write returned ${outs.length} of ${batch.length}`);
        for (const [i, p] of batch.entries()) p.resolve(outs[i]!);
      } catch (error) {
        for (const p of batch) p.reject(error);
      }
    }
  }
}

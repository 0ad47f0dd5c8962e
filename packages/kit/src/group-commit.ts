/**
 * Group commit: many callers each need one small write (a ledger entry, a delivery's
 * result), and one by one they cost a round trip each. Here callers `submit` an item and
 * get back their own item's result, while the items go to `write` in batches: one write
 * at a time, the first item of an idle moment at once, and the items that arrive while a
 * write is in flight together in the next one, up to `maxBatch` (the webhooks' WH-10;
 * PostgreSQL's own WAL flush works the same way). No timer and no added latency when idle,
 * batches as large as the load makes them.
 *
 * - `maxWaitMs` (default 0) trades latency for larger batches at low load: a batch that
 *   would start from idle with fewer than `maxBatch` items waits up to that long for
 *   company (it goes at once when it fills). Items queued behind a write never wait
 *   again: they already waited for that write.
 * - `fillTo: "last-batch"` ends that wait as soon as as many items wait as the last batch
 *   had: callers in a closed loop (request handlers each waiting for their write) come back
 *   with their next item together, and past them nobody is coming — waiting out `maxWaitMs`
 *   only adds it to every round. A lone caller then goes at once. MySQL's binlog group
 *   commit has the fixed form of this rule (`binlog_group_commit_sync_no_delay_count`).
 * - Each caller's promise settles with its own item's result (`write` returns one result
 *   per item, in order; a count mismatch is a bug and fails the batch). A failed write
 *   rejects every caller of that batch with its error, and the next batch still runs.
 * - Bounded: at most `maxPending` items wait (not counting the batch being written);
 *   past it `submit` refuses at once with GROUP_COMMIT_QUEUE_FULL (fields.limit) — back
 *   pressure the caller must handle, never an unbounded queue.
 *
 * @example
 * const ledger = new GroupCommit((entries) => insertEntries(db, entries), { maxBatch: 500, maxPending: 2_000 });
 * const row = await ledger.submit(entry); // this entry's own result, written with its neighbours
 * await ledger.drain();                   // at shutdown: everything submitted is written (or failed)
 */
import { assert } from "./assert.ts";
import { Deque } from "./deque.ts";
import { kitErrors } from "./kit-errors.ts";

export interface GroupCommitOptions {
  /** Items per write. */
  maxBatch: number;
  /** Items waiting at once (the batch being written not counted); more are refused. */
  maxPending: number;
  /** Longest a batch started from idle waits to fill up, in ms. Default 0: it goes at once. */
  maxWaitMs?: number;
  /**
   * What a batch started from idle waits for, `maxWaitMs` at most: "full" (default) `maxBatch`
   * items; "last-batch" as many items as the last batch had (`maxBatch` before any batch).
   */
  fillTo?: "full" | "last-batch";
  /** Replaces the timer of `maxWaitMs` (tests); default setTimeout. */
  sleep?: (ms: number) => Promise<void>;
}

export interface GroupCommitStats {
  /** Writes started. */
  readonly batches: number;
  /** Items handed to writes. */
  readonly items: number;
  /** Submits refused because `maxPending` items were waiting. */
  readonly refused: number;
}

/** Largest `maxBatch` and `maxPending`: far above any sane batch, a guard against a typo. */
const MAX_COUNT = 10_000_000;
/** Longest `maxWaitMs`: a group commit that waits seconds is a queue, use one. */
const MAX_WAIT_MS = 10_000;

interface Pending<I, O> {
  readonly item: I;
  readonly resolve: (out: O) => void;
  readonly reject: (error: unknown) => void;
}

export class GroupCommit<I, O> {
  readonly #write: (batch: I[]) => Promise<readonly O[]>;
  readonly #maxBatch: number;
  readonly #maxPending: number;
  readonly #maxWaitMs: number;
  readonly #fillToLastBatch: boolean;
  /** Items in the last batch handed to `write` (0 before the first). */
  #lastBatchSize = 0;
  readonly #sleep: ((ms: number) => Promise<void>) | undefined;
  readonly #pending = new Deque<Pending<I, O>>();
  /** True from the first item of a busy period until the flush loop finds nothing left. */
  #flushing = false;
  /** True while a batch is handed to `write` and its promise has not settled. */
  #writing = false;
  #flushed: Promise<void> = Promise.resolve();
  #filled: (() => void) | undefined;
  #stats = { batches: 0, items: 0, refused: 0 };

  constructor(write: (batch: I[]) => Promise<readonly O[]>, options: GroupCommitOptions) {
    for (const name of ["maxBatch", "maxPending"] as const) {
      const value = options[name];
      if (!(Number.isSafeInteger(value) && value >= 1 && value <= MAX_COUNT)) {
        throw new RangeError(`${name} must be an integer in [1, ${MAX_COUNT}], got ${value}`);
      }
    }
    const maxWaitMs = options.maxWaitMs ?? 0;
    if (!(Number.isFinite(maxWaitMs) && maxWaitMs >= 0 && maxWaitMs <= MAX_WAIT_MS)) {
      throw new RangeError(`maxWaitMs must be in [0, ${MAX_WAIT_MS}], got ${maxWaitMs}`);
    }
    this.#write = write;
    this.#maxBatch = options.maxBatch;
    this.#maxPending = options.maxPending;
    const fillTo = options.fillTo ?? "full";
    if (fillTo !== "full" && fillTo !== "last-batch") {
      throw new RangeError(`fillTo must be "full" or "last-batch", got ${String(fillTo)}`);
    }
    this.#maxWaitMs = maxWaitMs;
    this.#fillToLastBatch = fillTo === "last-batch";
    this.#sleep = options.sleep;
  }

  /** Items waiting for a write (the batch being written not counted). */
  get pending(): number {
    return this.#pending.length;
  }

  /** True while a batch is being written (not while the first items of an idle moment wait to fill it). */
  get writing(): boolean {
    return this.#writing;
  }

  get stats(): GroupCommitStats {
    return { ...this.#stats };
  }

  /** Queues `item` for the next write; resolves with its own result, rejects with its batch's error. */
  submit(item: I): Promise<O> {
    if (this.#pending.length >= this.#maxPending) {
      this.#stats.refused += 1;
      return Promise.reject(
        kitErrors.create("GROUP_COMMIT_QUEUE_FULL", {
          detail: `more than ${this.#maxPending} writes pending; retry once the pending batches are written`,
          fields: { limit: this.#maxPending },
        }),
      );
    }
    return new Promise<O>((resolve, reject) => {
      this.#pending.push({ item, resolve, reject });
      if (this.#filled !== undefined && this.#pending.length >= this.#fillTarget()) this.#filled();
      // The flush runs synchronously up to its first await: an idle batch is taken at once.
      if (!this.#flushing) {
        this.#flushing = true;
        this.#flushed = this.#flush();
      }
    });
  }

  /**
   * Ends a wait for company at once: the items waiting for it go in the next write. For a
   * reader that needs them written now, and for `drain` (a shutdown never waits for company).
   */
  hurry(): void {
    this.#filled?.();
  }

  /** Resolves once everything submitted so far is written (or failed); a wait for company is cut short. */
  async drain(): Promise<void> {
    this.hurry();
    while (this.#flushing) await this.#flushed;
  }

  async #flush(): Promise<void> {
    try {
      if (this.#maxWaitMs > 0 && this.#pending.length < this.#fillTarget()) await this.#waitToFill();
      while (this.#pending.length > 0) await this.#writeBatch();
    } finally {
      // Cleared in the very step the loop sees the queue empty (no await in between): an
      // item submitted by a caller the last batch woke starts a new flush instead of
      // waiting for one that has already ended.
      this.#flushing = false;
    }
  }

  async #writeBatch(): Promise<void> {
    const batch: Pending<I, O>[] = [];
    while (batch.length < this.#maxBatch && this.#pending.length > 0) batch.push(this.#pending.shift()!);
    this.#stats.batches += 1;
    this.#stats.items += batch.length;
    this.#lastBatchSize = batch.length;
    this.#writing = true;
    try {
      const outs = await this.#write(batch.map((p) => p.item));
      assert(outs.length === batch.length, "a group write returns one result per item", {
        results: outs.length,
        items: batch.length,
      });
      for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outs[i]!);
    } catch (error) {
      for (const p of batch) p.reject(error);
    } finally {
      this.#writing = false;
    }
  }

  /** The items that end a wait for company (see `fillTo`). */
  #fillTarget(): number {
    return this.#fillToLastBatch && this.#lastBatchSize > 0 ? this.#lastBatchSize : this.#maxBatch;
  }

  /** Up to maxWaitMs, cut short when the batch fills. */
  #waitToFill(): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const end = () => {
        clearTimeout(timer);
        this.#filled = undefined;
        resolve();
      };
      this.#filled = end;
      if (this.#sleep === undefined) timer = setTimeout(end, this.#maxWaitMs);
      else this.#sleep(this.#maxWaitMs).then(end, end);
    });
  }
}

/**
 * Usage rows written off the request path, in batches: a request hands its row over and goes
 * on; the rows go to the database in one INSERT per batch through kit's `GroupCommit` (the
 * first row of an idle moment after `maxWaitMs` (a second by default), the rows that arrive while a write is in
 * flight together in the next, up to `maxBatch`). Usage is what cost accounting and the usage
 * API read, so no row is dropped silently:
 *
 * - **Full buffer → backpressure, not drops.** Past `maxPending` rows waiting, `record`
 *   writes the caller's own row itself and resolves only once it is written: the request
 *   that found the buffer full waits for the database, like every request did before the
 *   buffer (a non-streamed answer goes out later; a stream has already ended). Dropping
 *   would lose money records exactly when the database is slow; waiting slows the gateway
 *   down to what its database can take.
 * - **A failed batch is retried** (`attempts` in all, a growing pause between them); a row
 *   still not written after that is lost, counted (`onLost`, `llm_gateway_usage_rows_total
 *   {result="lost"}`) and logged whole by the caller, so it can be replayed from the log.
 * - **Read your writes**: `summary` waits for the rows recorded before it on this replica
 *   (cutting a wait for company short).
 * - **Shutdown**: `drain()` (a close hook, before the pool closes) writes every row handed over,
 *   at once.
 *
 * @example
 * const writer = new UsageWriter(repository, { maxBatch: 500, maxPending: 10_000, maxWaitMs: 1_000, attempts: 3, onLost });
 * await writer.record(row);   // queued: resolves at once unless the buffer is full
 * await writer.drain();       // at shutdown
 */
import { GroupCommit } from "@casebook/kit/group-commit";
import type { UsageRecord, UsageSummaryRow } from "./usage-repository.ts";

/** Rows per INSERT: 10 parameters each, far below PostgreSQL's 65,535 per statement. */
export const MAX_USAGE_BATCH = 1_000;
export const DEFAULT_USAGE_BATCH = 500;
/** Rows waiting at once; past it the caller writes its own row (backpressure). */
export const DEFAULT_USAGE_MAX_PENDING = 10_000;
/**
 * How long the first row of an idle moment waits for company. A second: one INSERT per second
 * at most under a steady load, and a burst of streams ending together written in one INSERT
 * about a second later — not several INSERTs among the burst's last events. On PGlite an
 * INSERT runs on the gateway's own thread (WASM, and its files synced after the statement), so
 * each one there holds every stream's relay for its duration; at 20 ms a burst of 50 streams
 * ending took several. The usage API and shutdown cut the wait short (`hurry`, `drain`).
 */
export const DEFAULT_USAGE_FLUSH_MS = 1_000;
/** Tries per batch before its rows are counted lost. */
export const DEFAULT_USAGE_WRITE_ATTEMPTS = 3;
/** Pause before the second try; doubled before each next one. */
const RETRY_PAUSE_MS = 100;

/** What the usage API and the accounting need: rows in, sums out. */
export interface UsageLedger {
  record(row: UsageRecord): Promise<void>;
  summary(tenantId: string, range: { fromMs: number; toMs: number }): Promise<UsageSummaryRow[]>;
}

/** Where the rows go (the usage table, `UsageRepository`). */
export interface UsageRows {
  recordMany(rows: readonly UsageRecord[]): Promise<void>;
  summary(tenantId: string, range: { fromMs: number; toMs: number }): Promise<UsageSummaryRow[]>;
}

export interface UsageWriterOptions {
  readonly maxBatch: number;
  readonly maxPending: number;
  readonly maxWaitMs: number;
  readonly attempts: number;
  /** Rows given up on after every attempt failed: count them, log them whole. */
  readonly onLost: (rows: readonly UsageRecord[], error: unknown) => void;
  /** A row written by its own caller because the buffer was full. */
  readonly onBackpressure?: () => void;
  /** Rows written (batched or not). */
  readonly onWritten?: (count: number) => void;
  /** Replaces the retry pause's timer (tests). */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Stamps each row when it is handed over (the clock's nowMs). */
  readonly nowMs: () => number;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class UsageWriter implements UsageLedger {
  readonly #repository: UsageRows;
  readonly #options: UsageWriterOptions;
  readonly #commit: GroupCommit<UsageRecord, true>;
  /** The last row handed to the group commit: batches are written in order, so it settles last. */
  #last: Promise<unknown> = Promise.resolve();

  constructor(repository: UsageRows, options: UsageWriterOptions) {
    if (
      !(
        Number.isSafeInteger(options.maxBatch) &&
        options.maxBatch >= 1 &&
        options.maxBatch <= MAX_USAGE_BATCH
      )
    )
      throw new RangeError(`maxBatch must be an integer in [1, ${MAX_USAGE_BATCH}], got ${options.maxBatch}`);
    if (!(Number.isSafeInteger(options.attempts) && options.attempts >= 1))
      throw new RangeError(`attempts must be an integer ≥ 1, got ${options.attempts}`);
    this.#repository = repository;
    this.#options = options;
    this.#commit = new GroupCommit((rows) => this.#write(rows), {
      maxBatch: options.maxBatch,
      maxPending: options.maxPending,
      maxWaitMs: options.maxWaitMs,
    });
  }

  /** Rows waiting for a write. */
  get pending(): number {
    return this.#commit.pending;
  }

  /** Queues the row (resolves at once); with the buffer full, writes it and resolves once written. */
  async record(row: UsageRecord): Promise<void> {
    const stamped = { ...row, createdAtMs: row.createdAtMs ?? this.#options.nowMs() };
    if (this.#commit.pending >= this.#options.maxPending) {
      this.#options.onBackpressure?.();
      await this.#write([stamped]).catch((error: unknown) => this.#options.onLost([stamped], error));
      return;
    }
    const written = this.#commit.submit(stamped);
    this.#last = written.catch((error: unknown) => this.#options.onLost([stamped], error));
  }

  /** The tenant's sums, after the rows this replica was handed before the call are written. */
  async summary(tenantId: string, range: { fromMs: number; toMs: number }): Promise<UsageSummaryRow[]> {
    // The rows waiting for company go now: a reader never waits out maxWaitMs.
    this.#commit.hurry();
    await this.#last;
    return this.#repository.summary(tenantId, range);
  }

  /** Every row handed over so far written (or given up on): the shutdown's last step before the pool. */
  async drain(): Promise<void> {
    await this.#commit.drain();
    await this.#last;
  }

  async #write(rows: UsageRecord[]): Promise<true[]> {
    const sleep = this.#options.sleep ?? defaultSleep;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#repository.recordMany(rows);
        this.#options.onWritten?.(rows.length);
        return rows.map(() => true);
      } catch (error) {
        if (attempt >= this.#options.attempts) throw error;
        await sleep(RETRY_PAUSE_MS * 2 ** (attempt - 1));
      }
    }
  }
}

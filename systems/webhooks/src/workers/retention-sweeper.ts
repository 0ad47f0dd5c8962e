/**
 * The retention sweeper (WH-22, WH-23): on every round, in bounded batches,
 * deletes expired payloads, expires deliveries past their deadline, folds old attempts
 * into the per-day counters, and deletes long-published outbox rows (store/retention.ts).
 * Each kind repeats until a batch comes back short or `maxBatchesPerRound` is reached, so
 * one round is bounded and a large backlog drains over several rounds instead of one
 * long transaction. Safe on several replicas at once (SKIP LOCKED).
 *
 * @example
 * const sweeper = new RetentionSweeper(db, { intervalMs: 60_000 });
 * sweeper.start();
 * await sweeper.stop();
 */
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { type Clock, systemClock } from "@casebook/kit/clock";
import {
  deleteExpiredPayloads,
  deletePublishedOutbox,
  expireOverdueDeliveries,
  rollUpOldAttempts,
} from "../store/retention.ts";

export interface RetentionSweeperOptions {
  clock?: Clock;
  /** Rows per statement. Default 500. */
  maxBatch?: number;
  /** Statements per kind per round. Default 20. */
  maxBatchesPerRound?: number;
  /** Pause between rounds. Default 60 000. */
  intervalMs?: number;
  /** How long published outbox rows are kept (for investigating duplicates). Default 24 h. */
  outboxKeepMs?: number;
  onError?: (err: unknown) => void;
}

export interface SweepRound {
  payloadsDeleted: number;
  deliveriesExpired: number;
  attemptsRolledUp: number;
  outboxDeleted: number;
}

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
  return value;
}

export class RetentionSweeper {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #maxBatch: number;
  readonly #maxBatchesPerRound: number;
  readonly #intervalMs: number;
  readonly #outboxKeepMs: number;
  readonly #onError: (err: unknown) => void;
  readonly #loop: BackgroundLoop;

  constructor(db: Database, options: RetentionSweeperOptions = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#maxBatch = positiveInt("maxBatch", options.maxBatch ?? 500);
    this.#maxBatchesPerRound = positiveInt("maxBatchesPerRound", options.maxBatchesPerRound ?? 20);
    this.#intervalMs = positiveInt("intervalMs", options.intervalMs ?? 60_000);
    this.#outboxKeepMs = positiveInt("outboxKeepMs", options.outboxKeepMs ?? 86_400_000);
    this.#onError = options.onError ?? ((err) => console.error("retention sweeper:", err));
    // Every round is bounded and drains what it can (more waits for the next interval), and a failed
    // round waits the same interval: capMs = intervalMs keeps the pause constant.
    this.#loop = new BackgroundLoop({
      name: "sweeper",
      round: async () => {
        await this.runOnce();
        return false;
      },
      idleMs: this.#intervalMs,
      failureBackoff: { capMs: this.#intervalMs, jitter: "none" },
      onError: (err) => this.#onError(err),
    });
  }

  /** Repeats `batch` until it touches fewer than maxBatch rows or the round's bound is hit. */
  async #drain(batch: (maxBatch: number) => Promise<number>): Promise<number> {
    let total = 0;
    for (let i = 0; i < this.#maxBatchesPerRound; i++) {
      const n = await batch(this.#maxBatch);
      total += n;
      if (n < this.#maxBatch) break;
    }
    return total;
  }

  /** One bounded round of every sweep, at the clock's current time. */
  async runOnce(): Promise<SweepRound> {
    const nowMs = this.#clock.nowMs();
    const db = this.#db;
    return {
      payloadsDeleted: await this.#drain((maxBatch) => deleteExpiredPayloads(db, { nowMs, maxBatch })),
      deliveriesExpired: await this.#drain((maxBatch) => expireOverdueDeliveries(db, { nowMs, maxBatch })),
      attemptsRolledUp: await this.#drain((maxBatch) => rollUpOldAttempts(db, { nowMs, maxBatch })),
      outboxDeleted: await this.#drain((maxBatch) =>
        deletePublishedOutbox(db, { publishedBeforeMs: nowMs - this.#outboxKeepMs, maxBatch }),
      ),
    };
  }

  start(): void {
    this.#loop.start(); // throws "sweeper already started" when running
  }

  /** Stops after the current round. */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }
}

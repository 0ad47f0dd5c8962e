/**
 * The idempotency table's TTL in a running service (PY-04): a worker on kit's BackgroundLoop that
 * deletes keys older than the store's retention (24 h by default), oldest first, in bounded
 * batches (`IdempotencyStore.prune`: one DELETE of at most `maxBatch` rows, `SKIP LOCKED`, so
 * several replicas prune side by side and a key a request holds is never waited on). A round runs
 * at most `maxBatchesPerRound` batches; a round that hit that bound is followed at once by the next
 * (after a yield), so the table stays bounded at any write rate while no statement is large; a
 * round that found less waits `intervalMs`. Reads already ignore expired keys (`find`, `begin`):
 * pruning only frees the space.
 *
 * @example
 * const pruner = new IdempotencyPruner(store, { intervalMs: 60_000, onError: (e) => log.warn(e) });
 * pruner.start();
 * await pruner.stop();
 */
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { RandomSource } from "@casebook/kit/random";
import { loopFailureBackoff } from "./loop-backoff.ts";

export interface IdempotencyPrunerOptions {
  /** Keys per DELETE. Default 1 000 (at most infra's PRUNE_MAX_BATCH). */
  maxBatch?: number;
  /** DELETEs per round. Default 20. */
  maxBatchesPerRound?: number;
  /** Pause after a round that drained everything due, in ms. Default 60 000. */
  intervalMs?: number;
  random: RandomSource;
  onError: (error: unknown) => void;
}

export const DEFAULT_PRUNE_INTERVAL_MS = 60_000;

function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
  return value;
}

export class IdempotencyPruner {
  readonly #store: IdempotencyStore;
  readonly #maxBatch: number;
  readonly #maxBatchesPerRound: number;
  readonly #loop: BackgroundLoop;

  constructor(store: IdempotencyStore, options: IdempotencyPrunerOptions) {
    this.#store = store;
    this.#maxBatch = positiveInt("maxBatch", options.maxBatch ?? 1_000);
    this.#maxBatchesPerRound = positiveInt("maxBatchesPerRound", options.maxBatchesPerRound ?? 20);
    this.#loop = new BackgroundLoop({
      name: "idempotency pruner",
      round: async () => (await this.runOnce()).more,
      idleMs: positiveInt("intervalMs", options.intervalMs ?? DEFAULT_PRUNE_INTERVAL_MS),
      failureBackoff: loopFailureBackoff(options.random),
      onError: options.onError,
    });
  }

  /** One bounded round: batches until one comes back short or the round's bound; `more` when the bound cut it. */
  async runOnce(): Promise<{ deleted: number; more: boolean }> {
    let deleted = 0;
    for (let batch = 0; batch < this.#maxBatchesPerRound; batch++) {
      const n = await this.#store.prune({ maxBatch: this.#maxBatch });
      deleted += n;
      if (n < this.#maxBatch) return { deleted, more: false };
    }
    return { deleted, more: true };
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops after the round in progress. */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }
}

/**
 * Pending transfers' timeouts in a running service (016, issue 14; TigerBeetle's pending
 * `timeout`): a worker on kit's BackgroundLoop that voids holds whose deadline has passed,
 * soonest first, `maxBatch` a round (`LedgerRepository.voidExpired`: each in its own transaction,
 * `SKIP LOCKED`, so replicas expire side by side and a hold being posted is never waited on). A
 * full round is followed at once by the next; a round that found less waits `intervalMs`, the
 * most an expired hold keeps its funds reserved. Posting an expired hold is refused anyway
 * (LEDGER_PENDING_EXPIRED) whether or not the worker has reached it.
 *
 * @example
 * const expirer = new PendingExpirer(ledger, { intervalMs: 1_000, random, onError: (e) => log.warn(e) });
 * expirer.start();
 * await expirer.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { RandomSource } from "@casebook/kit/random";
import type { LedgerRepository } from "../store/ledger-repository.ts";
import { loopFailureBackoff } from "./loop-backoff.ts";

export interface PendingExpirerOptions {
  /** Holds voided per round. Default 100. */
  maxBatch?: number;
  /** Pause after a round that voided everything due, in ms. Default 1 000. */
  intervalMs?: number;
  random: RandomSource;
  onError: (error: unknown) => void;
}

export const DEFAULT_EXPIRE_INTERVAL_MS = 1_000;

export class PendingExpirer {
  readonly #ledger: Pick<LedgerRepository, "voidExpired">;
  readonly #maxBatch: number;
  readonly #loop: BackgroundLoop;

  constructor(ledger: Pick<LedgerRepository, "voidExpired">, options: PendingExpirerOptions) {
    this.#ledger = ledger;
    this.#maxBatch = options.maxBatch ?? 100;
    const intervalMs = options.intervalMs ?? DEFAULT_EXPIRE_INTERVAL_MS;
    if (!(Number.isInteger(this.#maxBatch) && this.#maxBatch >= 1 && this.#maxBatch <= 10_000))
      throw new RangeError(`maxBatch must be an integer in [1, 10000], got ${this.#maxBatch}`);
    if (!(Number.isInteger(intervalMs) && intervalMs >= 1))
      throw new RangeError(`intervalMs must be an integer >= 1, got ${intervalMs}`);
    this.#loop = new BackgroundLoop({
      name: "pending expirer",
      round: async () => (await this.runOnce()) === this.#maxBatch,
      idleMs: intervalMs,
      failureBackoff: loopFailureBackoff(options.random),
      onError: options.onError,
    });
  }

  /** One round: voids up to maxBatch expired holds; answers how many. */
  runOnce(): Promise<number> {
    return this.#ledger.voidExpired(this.#maxBatch);
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops after the round in progress. */
  async stop(): Promise<void> {
    await this.#loop.stop();
  }
}

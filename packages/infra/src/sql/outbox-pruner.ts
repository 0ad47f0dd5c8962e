/**
 * Keeps an unordered outbox from growing by a row per event for ever: on kit's BackgroundLoop,
 * deletes rows published more than `keepMs` ago, in batches of `batch` (a full batch is
 * followed at once by the next), every `everyMs` otherwise. Unpublished and parked rows stay:
 * they are work, not history. Run one per process beside the relay; several at once only
 * delete the same old rows.
 *
 * @example
 * const pruner = new OutboxPruner(db, { outbox, keepMs: 600_000, clock, onError: (err) => log.warn({ err }, "prune failed") });
 * pruner.start(); … await pruner.stop();
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { OutboxEventBase, UnorderedOutbox } from "./outbox.ts";
import type { Database } from "./sql.ts";

export interface OutboxPrunerOptions<E extends OutboxEventBase> {
  readonly outbox: UnorderedOutbox<E>;
  /** Published rows younger than this stay (a look at recent traffic, a late duplicate's check). */
  readonly keepMs: number;
  readonly clock: Clock;
  /** Pause between rounds that found less than a batch. Default 60 000. */
  readonly everyMs?: number;
  /** Rows deleted per statement. Default 1 000. */
  readonly batch?: number;
  /** A failed round (the database away); default console.error, as the relay's. */
  readonly onError?: (err: unknown) => void;
}

export class OutboxPruner<E extends OutboxEventBase> {
  readonly #loop: BackgroundLoop;

  constructor(db: Database, options: OutboxPrunerOptions<E>) {
    const everyMs = options.everyMs ?? 60_000;
    const batch = options.batch ?? 1_000;
    this.#loop = new BackgroundLoop({
      name: "outbox pruner",
      round: async () =>
        (await options.outbox.prunePublished(db, options.clock.nowMs() - options.keepMs, batch)) === batch,
      idleMs: everyMs,
      failureBackoff: { capMs: everyMs, jitter: "equal", random: systemRandom },
      onError: options.onError ?? ((err) => console.error("outbox pruner:", err)),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}

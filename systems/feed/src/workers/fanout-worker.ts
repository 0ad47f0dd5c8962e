/**
 * The fan-out worker: infra's OutboxRelay (a BackgroundLoop) draining `fanout_events`, with
 * the domain's Fanout as its "publisher" — publishing an event IS fanning it out. Several
 * workers (processes: FEED_ROLE=fanout) share the queue through the lease queue, one worker
 * per event at a time; a worker that dies mid-event leaves it leased, and after the lease
 * another redoes it — harmless, the writes are idempotent (FD-17). The author never waits for
 * any of it (FD-09): the API returns once the post and its event committed. Infra's
 * OutboxPruner beside it deletes events fanned out more than FANNED_OUT_KEPT_MS ago.
 *
 * @example
 * const worker = new FanoutWorker(db, { fanout, clock, onDone: (e, r) => {} });
 * worker.start(); … await worker.stop();
 */
import { OutboxPruner } from "@casebook/infra/sql/outbox-pruner";
import { OutboxRelay } from "@casebook/infra/sql/outbox-relay";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { Fanout, FanoutResult } from "../domain/fanout.ts";
import { type FanoutEvent, fanoutOutbox } from "../store/fanout-outbox.ts";

export interface FanoutWorkerOptions {
  readonly fanout: Fanout;
  readonly clock: Clock;
  /** Events claimed per round. Default 50. */
  readonly maxBatch?: number;
  /** Pause when the queue is empty. Default 50 ms: the fan-out delay target is about a second. */
  readonly pollIntervalMs?: number;
  /** Bound on one event's fan-out; a celebrity-sized push-active event must fit. Default 60 000. */
  readonly publishTimeoutMs?: number;
  readonly onDone?: (event: FanoutEvent, result: FanoutResult) => void;
  readonly onError?: (err: unknown, label: string | undefined) => void;
}

/** Fanned-out events are kept this long (a look at recent traffic), then pruned. */
export const FANNED_OUT_KEPT_MS = 60 * 60_000;

export class FanoutWorker {
  readonly #relay: OutboxRelay<FanoutEvent>;
  readonly #pruner: OutboxPruner<FanoutEvent>;

  constructor(db: Database, options: FanoutWorkerOptions) {
    const publishTimeoutMs = options.publishTimeoutMs ?? 60_000;
    this.#relay = new OutboxRelay(db, {
      outbox: fanoutOutbox,
      clock: options.clock,
      random: systemRandom,
      maxBatch: options.maxBatch ?? 50,
      pollIntervalMs: options.pollIntervalMs ?? 50,
      publishTimeoutMs,
      leaseMs: publishTimeoutMs * 2,
      retryBaseMs: 200,
      retryCapMs: 10_000,
      maxAttempts: 50,
      onError: options.onError,
      publisher: {
        publish: async (event) => {
          const result = await options.fanout.handle(event);
          options.onDone?.(event, result);
        },
      },
    });
    this.#pruner = new OutboxPruner(db, {
      outbox: fanoutOutbox,
      keepMs: FANNED_OUT_KEPT_MS,
      clock: options.clock,
      ...(options.onError ? { onError: (err: unknown) => options.onError?.(err, undefined) } : {}),
    });
  }

  /** One round (tests drive the worker with it): claims and fans out what is due. */
  runOnce(): Promise<{ claimed: number; published: number; failed: number }> {
    return this.#relay.runOnce();
  }

  start(): void {
    this.#relay.start();
    this.#pruner.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#relay.stop(), this.#pruner.stop()]);
  }

  /** Events not yet fanned out, and the oldest one's age: the queue's depth and lag. */
  lag(db: Database, nowMs: number): Promise<{ unpublished: bigint; parked: bigint; oldestAgeMs: number }> {
    return fanoutOutbox.lag(db, nowMs);
  }
}

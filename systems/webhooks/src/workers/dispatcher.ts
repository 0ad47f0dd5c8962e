/**
 * The dispatcher (WH-07, WH-09): receives an event id from the relay and fans it out into
 * one delivery per matching active subscription (store/fan-out.ts). It is the relay's
 * publisher when both run in one service; behind a broker it would be the consumer. It
 * keeps no state of its own: publishing an event twice is answered by the database's
 * UNIQUE (event_id, subscription_id), so duplicates cost one statement and create nothing.
 *
 * @example
 * const dispatcher = new Dispatcher(db);
 * const relay = new OutboxRelay(db, { publisher: dispatcher });
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { fanOut } from "../store/fan-out.ts";
import type { PublishedEvent } from "../store/outbox.ts";
import type { EventPublisher } from "./outbox-relay.ts";

export interface DispatcherStats {
  /** Events fanned out, duplicates included. */
  events: number;
  deliveriesCreated: number;
  /** Publishes that found every delivery already made (a relay re-publish, WH-14). */
  duplicatePublishes: number;
}

export class Dispatcher implements EventPublisher {
  readonly #db: Queryable;
  readonly #clock: Clock;
  readonly #stats: DispatcherStats = { events: 0, deliveriesCreated: 0, duplicatePublishes: 0 };

  constructor(db: Queryable, options: { clock?: Clock } = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
  }

  /** Counters since start, for /metrics. */
  get stats(): Readonly<DispatcherStats> {
    return { ...this.#stats };
  }

  /** Creates the event's missing deliveries, due now. */
  async publish(event: PublishedEvent, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const { created } = await fanOut(this.#db, { eventId: event.eventId, nowMs: this.#clock.nowMs() });
    this.#stats.events += 1;
    this.#stats.deliveriesCreated += created;
    if (created === 0 && event.publishCount > 1) this.#stats.duplicatePublishes += 1;
  }
}

/**
 * The webhooks outbox relay (WH-07, WH-14): infra's relay (`@casebook/infra/sql/outbox-relay`)
 * over `webhookOutbox`, unordered — each round claims a bounded batch of due rows, publishes
 * them to the dispatcher one by one with a timeout, and marks each. Several relays may run at
 * once; they take disjoint rows. A failed publish gives the row back with a capped, jittered
 * exponential delay; it is retried until it succeeds (maxAttempts Infinity: never parked) — the
 * event committed, so dropping it would break the producer's contract, and the fan-out it
 * waits for is local. Failed rounds (the database away) double the loop's pause up to
 * MAX_ROUND_ERROR_BACKOFF_MS; claims a failed round left leased are given back first thing in
 * the next round.
 *
 * @example
 * const relay = new OutboxRelay(db, { publisher: new Dispatcher(db) });
 * relay.start();
 * // … on shutdown:
 * await relay.stop();
 */
import {
  type EventPublisher as OutboxPublisher,
  OutboxRelay as Relay,
  type OutboxRelayOptions as RelayOptions,
} from "@casebook/infra/sql/outbox-relay";
import type { Database } from "@casebook/infra/sql/sql";
import { type PublishedEvent, webhookOutbox } from "../store/outbox.ts";

export { MAX_ROUND_ERROR_BACKOFF_MS, type RelayRound } from "@casebook/infra/sql/outbox-relay";
export type { PublishedEvent };
/** Where events go (the dispatcher, a broker, a test's recorder). Must be safe to repeat. */
export type EventPublisher = OutboxPublisher<PublishedEvent>;
export type OutboxRelayOptions = Omit<RelayOptions<PublishedEvent>, "outbox">;

/** The relay over the webhooks outbox: never parks a row. */
export class OutboxRelay extends Relay<PublishedEvent> {
  constructor(db: Database, options: OutboxRelayOptions) {
    super(db, { outbox: webhookOutbox, maxAttempts: Number.POSITIVE_INFINITY, ...options });
  }
}

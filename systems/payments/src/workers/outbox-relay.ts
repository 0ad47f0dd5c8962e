/**
 * The payments outbox relay (PY-11): infra's relay (`@casebook/infra/sql/outbox-relay`) over
 * `paymentsOutbox`, ordered per key — what the seed does with an SQS FIFO queue grouped by
 * account. Up to `maxInFlightKeys` keys in flight, a key's events one at a time in seq order;
 * a failing head is retried with backoff (500 ms doubling to 60 s, equal jitter) and its key
 * parked after `maxAttempts` (25) for an operator (`resumeStream`); the loop backs off after
 * failed rounds like every payments worker (`loop-backoff.ts`). A key's progress is marked once
 * per run of up to RELAY_MARK_EVERY events (issue 14): every payment's event lands on its
 * merchant's stream row, which the saga's step groups also write, so a mark per event was a
 * commit per payment on the merchant's hot row; a relay that dies sends up to that many again,
 * under the same event ids (the webhooks system dedupes them by Idempotency-Key).
 *
 * @example
 * const relay = new OutboxRelay(db, { publisher: createWebhookPublisher({ url, apiKey }), random: systemRandom });
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
import { systemRandom } from "@casebook/kit/random";
import { type OutboxEvent, paymentsOutbox } from "../store/outbox.ts";
import { loopFailureBackoff } from "./loop-backoff.ts";

/** Where events go: a webhook service, a broker, a test's recorder. Must be safe to repeat. */
export type EventPublisher = OutboxPublisher<OutboxEvent>;
export type OutboxRelayOptions = Omit<RelayOptions<OutboxEvent>, "outbox">;
export type { RelayRound } from "@casebook/infra/sql/outbox-relay";

/** Events of one key published between two marks at most (the relay's batch: one mark per claim). */
export const RELAY_MARK_EVERY = 100;

/** The relay over the payments outbox, with the payments loops' failure backoff. */
export class OutboxRelay extends Relay<OutboxEvent> {
  constructor(db: Database, options: OutboxRelayOptions) {
    super(db, {
      outbox: paymentsOutbox,
      markEvery: RELAY_MARK_EVERY,
      failureBackoff: loopFailureBackoff(options.random ?? systemRandom),
      ...options,
    });
  }
}

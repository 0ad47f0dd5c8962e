/**
 * The backstop of the channel events (CH-20): infra's OutboxRelay over `channel_events`
 * (store/channel-event-outbox.ts). The send path publishes a channel message's event itself
 * right after its commit; a row it did not mark within the grace — its publish failed (the
 * stream down), or its process died first — is claimed here and published: the message loaded
 * from the history with its commit offset, then ChannelFanout's publish (the message id as
 * the stream's msgId). Retried with backoff for as long as the stream stays down, never
 * parked: an event the members have not had is not given up on. Every send service runs one;
 * the lease queue keeps one relay per row, and a relay that dies mid-publish leaves its row to
 * another after the lease (a second publish of the same msgId: deduplicated). Infra's
 * OutboxPruner beside it deletes published rows after PUBLISHED_KEPT_MS.
 *
 * @example
 * const relay = new ChannelEventRelay(db, { history, offsets, events: fanout, clock, log });
 * relay.start(); … await relay.stop();
 */
import { OutboxPruner } from "@casebook/infra/sql/outbox-pruner";
import { OutboxRelay } from "@casebook/infra/sql/outbox-relay";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { Message } from "../domain/conversation.ts";
import type { ChannelEvents } from "../domain/send-path.ts";
import { type ChannelEvent, channelEventOutbox, PUBLISHED_KEPT_MS } from "../store/channel-event-outbox.ts";

export interface ChannelEventRelayOptions {
  readonly history: { messageById(chatId: bigint, id: bigint): Promise<Message | undefined> };
  readonly offsets: { offsetOf(chatId: bigint, id: bigint): Promise<bigint> };
  readonly events: ChannelEvents;
  readonly clock: Clock;
  readonly log: { warn(fields: Record<string, unknown>, message: string): void };
  /** Called for each event the relay published (tests, metrics). */
  readonly onPublished?: (event: ChannelEvent) => void;
}

export class ChannelEventRelay {
  readonly #relay: OutboxRelay<ChannelEvent>;
  readonly #pruner: OutboxPruner<ChannelEvent>;

  constructor(db: Database, options: ChannelEventRelayOptions) {
    this.#relay = new OutboxRelay(db, {
      outbox: channelEventOutbox,
      clock: options.clock,
      random: systemRandom,
      maxBatch: 100,
      // Idle polls are cheap and rare work: the send path publishes the common case itself.
      pollIntervalMs: 200,
      publishTimeoutMs: 10_000,
      leaseMs: 30_000,
      retryBaseMs: 250,
      retryCapMs: 5_000,
      maxAttempts: Number.POSITIVE_INFINITY,
      onError: (err, label) => options.log.warn({ err, event: label }, "channel event relay: publish failed"),
      publisher: {
        publish: async (event) => {
          const found = await options.history.messageById(event.chatId, event.messageId);
          // Gone only with its conversation: nothing left to announce.
          if (found === undefined) return;
          const seq = found.seq ?? (await options.offsets.offsetOf(found.chatId, found.id));
          await options.events.publish({ ...found, seq });
          options.onPublished?.(event);
        },
      },
    });
    this.#pruner = new OutboxPruner(db, {
      outbox: channelEventOutbox,
      keepMs: PUBLISHED_KEPT_MS,
      clock: options.clock,
      onError: (err) => options.log.warn({ err }, "channel event prune failed; retrying"),
    });
  }

  start(): void {
    this.#relay.start();
    this.#pruner.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#relay.stop(), this.#pruner.stop()]);
  }
}

/**
 * The outbox of channel events (CH-20), infra's UnorderedOutbox over `channel_events`
 * (010_channel_events.sql). A channel message's row and its event row are written in ONE
 * transaction (history-store.ts), so the message's one stream event exists iff the message
 * does. The send service publishes it itself right after the commit and marks it
 * (`markChannelEventPublished`); the row is held back from relays for `CHANNEL_EVENT_GRACE_MS` so that
 * this common case costs no second publish. A send service that dies before its publish, or a
 * stream that stays down past the publish, leaves the row to the relay
 * (`workers/channel-event-relay.ts`), which publishes it — again, if the writer's publish
 * went out and its mark did not: the stream's dedup window (the message id as msgId) and the
 * clients (by message id, CH-10) drop the copy.
 *
 * @example
 * await db.transaction(async (tx) => { await insertMessage(tx); await enqueueChannelEvent(tx, chatId, id, nowMs); });
 * await publish(message); await markChannelEventPublished(db, message.id, Date.now());
 */
import { UnorderedOutbox } from "@casebook/infra/sql/outbox";
import type { Queryable } from "@casebook/infra/sql/sql";

/** How long a channel event is the send path's to publish before a relay takes it. */
export const CHANNEL_EVENT_GRACE_MS = 2_000;
/** Published rows are kept this long (a look at recent traffic), then pruned. */
export const PUBLISHED_KEPT_MS = 10 * 60_000;

/** What the relay gets: the message to load and publish. */
export interface ChannelEvent {
  readonly eventId: string;
  readonly chatId: bigint;
  readonly messageId: bigint;
}

export const channelEventOutbox = new UnorderedOutbox<ChannelEvent>({
  table: "channel_events",
  columns: ["chat_id", "message_id"],
  event: (row) => ({
    eventId: row.eventId,
    chatId: row.columns.chat_id as bigint,
    messageId: row.columns.message_id as bigint,
  }),
});

function eventIdOf(messageId: bigint): string {
  return `channel-message:${messageId}`;
}

/** In the message's transaction: its event, due for relays after the grace. */
export async function enqueueChannelEvent(
  tx: Queryable,
  chatId: bigint,
  messageId: bigint,
  nowMs: number,
): Promise<void> {
  await channelEventOutbox.enqueue(
    tx,
    { eventId: eventIdOf(messageId), columns: { chat_id: String(chatId), message_id: String(messageId) } },
    { nowMs, dueInMs: CHANNEL_EVENT_GRACE_MS },
  );
}

/** The send path published the message's event itself: no relay needs to. */
export function markChannelEventPublished(q: Queryable, messageId: bigint, nowMs: number): Promise<boolean> {
  return channelEventOutbox.markPublishedByWriter(q, eventIdOf(messageId), nowMs);
}

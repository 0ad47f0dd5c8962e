/**
 * The payments outbox (PY-11): infra's ordered outbox (`@casebook/infra/sql/outbox`) over this
 * schema's `outbox_streams` + `outbox_events` (migrations 004 and 011). A post-payment event
 * (webhook, e-mail, reconciliation) is written by `enqueue` in the SAME transaction as the
 * change that caused it, so it exists iff that change committed; the relay
 * (`workers/outbox-relay.ts`) publishes it in order per ordering key (the account, SQS FIFO's
 * MessageGroupId), in parallel across keys, at least once, under a stable `eventId`.
 *
 * @example
 * await db.transaction(async (tx) => {
 *   await applyTransfers(tx, ...);
 *   await enqueue(tx, { orderingKey: `merchant:${merchantId}`, type: "payment.captured", payload: { paymentId, amountMinor } });
 * });
 */
import {
  type EnqueueOptions,
  type NewOrderedEvent,
  OrderedOutbox,
  type OrderedOutboxEvent,
  type StreamState,
} from "@casebook/infra/sql/outbox";
import type { Queryable } from "@casebook/infra/sql/sql";

export type { StreamState };
/** An event as the relay hands it to a publisher. */
export type OutboxEvent = OrderedOutboxEvent;
export type NewOutboxEvent = NewOrderedEvent;

/** The outbox over this schema's tables (the infra defaults' names). */
export const paymentsOutbox = new OrderedOutbox({ streams: "outbox_streams", events: "outbox_events" });

/** `paymentsOutbox.enqueue`: writes `event` in the caller's transaction `tx`. */
export function enqueue(
  tx: Queryable,
  event: NewOutboxEvent,
  options?: EnqueueOptions,
): Promise<{ eventId: string; seq: bigint }> {
  return paymentsOutbox.enqueue(tx, event, options);
}

/** `paymentsOutbox.enqueueMany`: writes `events` in the caller's transaction `tx`, each key's in the given order. */
export function enqueueMany(
  tx: Queryable,
  events: readonly NewOutboxEvent[],
  options?: EnqueueOptions,
): Promise<{ eventId: string; seq: bigint }[]> {
  return paymentsOutbox.enqueueMany(tx, events, options);
}

/** Un-parks a key (an operator fixed the consumer): its head event is retried at once. */
export function resumeStream(db: Queryable, orderingKey: string, nowMs: number): Promise<boolean> {
  return paymentsOutbox.resume(db, orderingKey, nowMs);
}

/** The state of one key's stream, or undefined when it never had an event. */
export function streamState(db: Queryable, orderingKey: string): Promise<StreamState | undefined> {
  return paymentsOutbox.state(db, orderingKey);
}

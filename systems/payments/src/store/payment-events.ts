/**
 * A finished saga's event (PY-11) and where it is written: `eventOf` builds it from the payment as
 * finished, and a sink writes a group of them in the same commit as the step that finished them
 * — `write` inside a step's own transaction, `ctes` as part of the step group's one statement
 * (store/saga-step-group.ts). `outboxEventSink` is the service's: the payments outbox, ordered
 * per merchant account, each event named by its type and payment.
 *
 * @example
 * const events = payments.map(eventOf);
 * await outboxEventSink.write(tx, events);
 * const part = outboxEventSink.ctes(events, 12); // `WITH …, ${part.ctes} SELECT … FROM ${part.events}`
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { type NewOutboxEvent, paymentsOutbox } from "./outbox.ts";
import { type Payment, paymentView } from "./payment-repository.ts";

/** What leaves the saga when it finishes; the sink persists it in the same commit. */
export interface PaymentEvent {
  type: string;
  /** The payment's public id (`pay_…`, or a pre-013 payment's decimal id): also names the event. */
  paymentId: string;
  merchantId: string;
  /** Ordering key for per-account ordering downstream (PY-11). */
  accountKey: string;
  payload: Record<string, unknown>;
}

/** Where finished sagas' events are written, in the given order, in the commit that finished them. */
export interface PaymentEventSink {
  /** Inside `tx`: a step committed in its own transaction. */
  write(tx: Queryable, events: readonly PaymentEvent[]): Promise<void>;
  /**
   * The same writes as CTEs of a larger statement, parameters from `$offset+1`: `events` names
   * the CTE with one row per event written (the statement reads it to count them).
   */
  ctes(events: readonly PaymentEvent[], offset: number): { ctes: string; events: string; params: unknown[] };
}

/** The event of a finished payment: `payment.<status>`, its view as the payload. */
export function eventOf(p: Payment): PaymentEvent {
  return {
    type: `payment.${p.status}`,
    // The public id (public-ids.ts): events leave the service, the internal id does not.
    paymentId: p.publicId,
    merchantId: p.merchantId,
    accountKey: `${p.merchantId}:${p.currency}`,
    payload: paymentView(p),
  };
}

/** A finished saga's event as the outbox stores it: ordered per merchant account, named by type and payment. */
function outboxEventOf(event: PaymentEvent): NewOutboxEvent {
  return {
    orderingKey: event.accountKey,
    type: event.type,
    eventId: `${event.type}:${event.paymentId}`,
    payload: { ...event.payload, paymentId: event.paymentId, merchantId: event.merchantId },
  };
}

/** The payments outbox as the saga's sink. */
export const outboxEventSink: PaymentEventSink = {
  async write(tx, events) {
    await paymentsOutbox.enqueueMany(tx, events.map(outboxEventOf));
  },
  ctes(events, offset) {
    return paymentsOutbox.enqueueManyStatement(events.map(outboxEventOf), { offset, prefix: "event_" });
  },
};

/**
 * The webhooks outbox (WH-07, WH-14): infra's unordered outbox (`@casebook/infra/sql/outbox`)
 * over this schema's `outbox` table (migrations 003 and 007). event-repository's `enqueue`
 * writes a row beside its event in the producer's transaction; a relay
 * (`workers/outbox-relay.ts`) claims due rows in batches, publishes each to the dispatcher and
 * marks it. At least once, by design: a relay that dies after publishing and before marking
 * leaves the row leased; when the lease runs out another relay publishes the same event id
 * once more, and fan-out is idempotent (WH-09), so the second publish creates nothing.
 *
 * @example
 * const claims = await webhookOutbox.claim(db, { owner: "relay-1", nowMs, leaseMs: 30_000, limit: 100 });
 */
import { UnorderedOutbox } from "@casebook/infra/sql/outbox";

/** What the relay hands on: the stable event id and its routing context. */
export interface PublishedEvent {
  eventId: string;
  tenantId: string;
  /** 1 on the first publish; more after a failure or a relay crash (a duplicate publish). */
  publishCount: number;
}

/** The outbox over this schema's `outbox` table; each row carries its tenant. */
export const webhookOutbox = new UnorderedOutbox<PublishedEvent>({
  table: "outbox",
  columns: ["tenant_id"],
  event: (row) => ({
    eventId: row.eventId,
    tenantId: row.columns.tenant_id as string,
    publishCount: row.publishCount,
  }),
});

/**
 * The queue between a write and its fan-out: infra's UnorderedOutbox over `fanout_events`,
 * written in the SAME transaction as the post (or follow) that caused it, so an event exists
 * iff its post committed (FD-09: the post is durable first; no post without its fan-out, no
 * fan-out of a post that rolled back). Fan-out workers lease rows from it (infra's lease
 * queue): at-least-once, one worker per row at a time, a crashed worker's rows come back
 * after their lease — which is why the fan-out is idempotent (FD-17).
 *
 * @example
 * await db.transaction((tx) => fanoutOutbox.enqueue(tx, { eventId: "post:1", columns: { kind: "post", actor_id: 7n, target_id: 1n } }));
 */
import { UnorderedOutbox } from "@casebook/infra/sql/outbox";
import type { Queryable } from "@casebook/infra/sql/sql";

export type FanoutKind = "post" | "follow" | "unfollow";

/** What a fan-out worker gets: a post to push, or a follow to merge / an unfollow to undo. */
export interface FanoutEvent {
  readonly eventId: string;
  readonly kind: FanoutKind;
  /** The author (post) or the follower (follow, unfollow). */
  readonly actorId: bigint;
  /** The post id (post) or the followee (follow, unfollow). */
  readonly targetId: bigint;
  readonly createdAtMs: number;
  /** Deliveries of this row so far, this one included: above 1 is a redelivery. */
  readonly deliveries: number;
}

export const fanoutOutbox = new UnorderedOutbox<FanoutEvent>({
  table: "fanout_events",
  columns: ["kind", "actor_id", "target_id"],
  event: (row) => ({
    eventId: row.eventId,
    kind: row.columns.kind as FanoutKind,
    actorId: row.columns.actor_id as bigint,
    targetId: row.columns.target_id as bigint,
    createdAtMs: row.createdAtMs,
    deliveries: row.publishCount,
  }),
});

export function enqueueFanout(
  tx: Queryable,
  event: { kind: FanoutKind; actorId: bigint; targetId: bigint; eventId: string },
  nowMs: number,
): Promise<{ id: bigint }> {
  return fanoutOutbox.enqueue(
    tx,
    {
      eventId: event.eventId,
      columns: { kind: event.kind, actor_id: event.actorId, target_id: event.targetId },
    },
    { nowMs },
  );
}

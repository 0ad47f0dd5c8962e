/**
 * Fan-out (WH-07, WH-09): one delivery per (event, matching active subscription), in one
 * statement. `UNIQUE (event_id, subscription_id)` with `ON CONFLICT DO NOTHING` makes it
 * idempotent: the relay publishing an event twice (WH-14), or two dispatchers racing on
 * it, still yields one delivery per subscription — the second run inserts nothing.
 *
 * Which subscriptions: the event's tenant's, active, whose filters select the type
 * (`eventTypeMatches` in domain/store-event-type.ts is the same rule in TypeScript), and
 * created no later than the event. That last condition makes the set a function of the
 * event alone, so a late re-publish cannot add an endpoint registered in between.
 * A subscription disabled in between is skipped by a re-publish, and its deliveries
 * already made are cancelled by the worker's re-check (WH-04).
 *
 * Each delivery's deadline is the event's creation + the tenant's window (24 h default,
 * WH-18); its ordering key (WH-03) is the payload value at the subscription's path, NULL
 * when ordering is off or the payload lacks the path (such a delivery is unordered).
 *
 * @example
 * const { created } = await fanOut(db, { eventId, nowMs: clock.nowMs() });
 */
import type { Queryable } from "@casebook/infra/sql/sql";

const FAN_OUT = `
  WITH e AS (
    SELECT e.id, e.seq, e.tenant_id, e.type, e.payload, e.created_at, t.delivery_window_s
      FROM events e JOIN tenants t ON t.id = e.tenant_id
     WHERE e.id = $1
  ), matched AS (
    SELECT s.id, s.ordering_key_path
      FROM subscriptions s, e
     WHERE s.tenant_id = e.tenant_id AND s.active AND s.created_at <= e.created_at
       AND (s.event_types IS NULL OR EXISTS (
             SELECT 1 FROM unnest(s.event_types) AS f(filter)
              WHERE f.filter = '*' OR f.filter = e.type
                 OR (right(f.filter, 2) = '.*' AND starts_with(e.type, left(f.filter, -1)))))
  )
  INSERT INTO deliveries (id, event_id, event_seq, subscription_id, tenant_id, state, next_attempt_at,
                          deadline_at, ordering_key, created_at, updated_at)
  SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), e.id, e.seq, m.id, e.tenant_id, 'pending', $2,
         e.created_at + make_interval(secs => e.delivery_window_s),
         CASE WHEN m.ordering_key_path IS NULL THEN NULL ELSE left(e.payload #>> m.ordering_key_path, 255) END,
         $2, $2
    FROM e CROSS JOIN matched m
  ON CONFLICT (event_id, subscription_id) DO NOTHING
  RETURNING id`;

export interface FanOutResult {
  /** Deliveries this call created; 0 when an earlier publish already made them all. */
  created: number;
  deliveryIds: string[];
}

/** Creates the missing deliveries of `eventId`, due at `nowMs`. */
export async function fanOut(q: Queryable, input: { eventId: string; nowMs: number }): Promise<FanOutResult> {
  const { rows } = await q.query<{ id: string }>(FAN_OUT, [input.eventId, new Date(input.nowMs)]);
  return { created: rows.length, deliveryIds: rows.map((r) => r.id) };
}

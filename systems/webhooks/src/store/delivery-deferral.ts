/**
 * Giving claimed deliveries back for later, without an attempt (WH-20, WH-15): the retry
 * budget said "not now" to a retry, or the endpoint is under a Retry-After hold longer than
 * a lease can cover. The delivery goes back to `pending`, due at `untilMs`, its lease
 * dropped and its version bumped: a compare-and-swap on (id, lease_version) like every
 * worker write (delivery-results.ts), so a worker whose lease was taken over changes
 * nothing. Nothing is recorded in `attempts`: no request left.
 *
 * A deferral reaching the deadline ends the delivery as `expired` (reason `deadline`) at
 * once — no attempt could start anyway (WH-18, WH-23), and a visible final state beats a
 * row waiting for the sweeper.
 *
 * @example
 * const [write] = await deferDeliveries(db, [{ lease, untilMs: nowMs + 1_000 }], nowMs);
 * if (!write.won) log.warn("lease lost before the deferral");
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { type DeliveryLease, deliveryQueue, queueLease } from "./delivery-claims.ts";

export interface Deferral {
  lease: DeliveryLease;
  /** When the delivery is due again (epoch ms). */
  untilMs: number;
}

export interface DeferralWrite {
  deliveryId: string;
  /** False: the lease was lost, nothing was written. */
  won: boolean;
  state: "pending" | "expired" | null;
}

/** Largest batch of deferrals in one statement. */
export const MAX_DEFERRAL_BATCH = 1_000;

/** Defers each delivery whose lease is still current; one write per input, in input order. */
export async function deferDeliveries(
  q: Queryable,
  deferrals: readonly Deferral[],
  nowMs: number,
): Promise<DeferralWrite[]> {
  if (deferrals.length === 0) return [];
  if (deferrals.length > MAX_DEFERRAL_BATCH)
    throw new RangeError(`at most ${MAX_DEFERRAL_BATCH} deferrals per write`);
  for (const d of deferrals) {
    if (!Number.isFinite(d.untilMs)) throw new RangeError(`deferral of ${d.lease.deliveryId}: untilMs`);
  }
  if (new Set(deferrals.map((d) => d.lease.deliveryId)).size !== deferrals.length)
    throw new RangeError("deferDeliveries: a delivery appears twice in one batch");
  // The queue's fenced batch; the CASEs are the deadline rule.
  const writes = await deliveryQueue.updateMany(
    q,
    deferrals.map((d) => queueLease(d.lease)),
    {
      nowMs,
      columns: [{ name: "until_at", type: "timestamptz", values: deferrals.map((d) => new Date(d.untilMs)) }],
      set: (p) => `state = CASE WHEN i.until_at >= t.deadline_at THEN 'expired' ELSE 'pending' END,
         state_reason = CASE WHEN i.until_at >= t.deadline_at THEN 'deadline' ELSE t.state_reason END,
         next_attempt_at = CASE WHEN i.until_at >= t.deadline_at THEN ${p.now} ELSE i.until_at END,
         finished_at = CASE WHEN i.until_at >= t.deadline_at THEN ${p.now} ELSE NULL END,
         updated_at = ${p.now}`,
    },
  );
  return deferrals.map((d, i) => {
    const write = writes[i]!;
    return write.won
      ? { deliveryId: d.lease.deliveryId, won: true, state: write.row.state as "pending" | "expired" }
      : { deliveryId: d.lease.deliveryId, won: false, state: null };
  });
}

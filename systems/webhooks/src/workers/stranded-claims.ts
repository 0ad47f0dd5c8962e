/**
 * Claims a database failure stranded in the delivery worker (WH-11, WH-14), and giving them
 * back as soon as the database answers again.
 *
 * When the database fails while the worker holds a claim — the re-check, a renewal, a
 * deferral or the attempt's record fails — the delivery stays leased to this worker, and
 * without a give-back it would wait out its lease (45 s by default) after the database
 * returned. The worker remembers each such claim here (no more than its window holds) and,
 * first thing in its next round, gives them back due now (a failed deferral: at its own
 * time), each by a compare-and-swap on its lease version (deferDeliveries): a claim another
 * worker has taken over since, or whose write did land though its answer was lost, is left
 * alone. So a send whose
 * result could not be recorded goes again with the same webhook-id (at least once, WH-14),
 * and is recorded once: either the lost write landed (the CAS loses, nothing goes again) or
 * it did not (nothing was recorded, the second send is).
 *
 * A claim statement whose answer was lost is worse: rows may be leased to this worker under
 * versions it never saw. After such a round the next give-back also releases every
 * delivery leased to this worker that it does not hold (releaseOrphanedLeases, fenced by
 * the owner).
 *
 * @example
 * const stranded = new StrandedClaims(db, { workerId: "w-1", max: 128 });
 * stranded.remember(claimed); // its record failed: SQL_UNAVAILABLE
 * await stranded.giveBack(clock.nowMs(), heldIds); // next round; throws while the database is down
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { type DeliveryLease, releaseOrphanedLeases } from "../store/delivery-claims.ts";
import { deferDeliveries, MAX_DEFERRAL_BATCH } from "../store/delivery-deferral.ts";

export interface GiveBackResult {
  /** Back to `pending`, due now (a failed deferral: at its own time). */
  givenBack: number;
  /** Past their deadline: ended `expired` instead (no attempt could start anyway, WH-18). */
  expired: number;
  /** Lease no longer this worker's (taken over, or the lost write had landed): untouched. */
  untouched: number;
  /** Leased to this worker by a claim whose answer was lost: given back by owner. */
  orphans: number;
}

export interface StrandedClaimsOptions {
  workerId: string;
  /** Most claims remembered: the worker's window. Beyond it a claim waits out its lease. */
  max: number;
}

export class StrandedClaims {
  readonly #db: Queryable;
  readonly #workerId: string;
  readonly #max: number;
  /** Claim → when it is due again: now, or a failed deferral's own time (a hold, the retry budget). */
  readonly #leases = new Map<string, { lease: DeliveryLease; untilMs: number | undefined }>();
  #claimInDoubt = false;

  constructor(db: Queryable, options: StrandedClaimsOptions) {
    if (!Number.isSafeInteger(options.max) || options.max < 1) throw new RangeError("max must be >= 1");
    this.#db = db;
    this.#workerId = options.workerId;
    this.#max = options.max;
  }

  /** Claims remembered. */
  get size(): number {
    return this.#leases.size;
  }

  /** Something to give back before the next claim. */
  get owed(): boolean {
    return this.#leases.size > 0 || this.#claimInDoubt;
  }

  /**
   * Remembers a claim the worker could not settle, due again at once or, for a deferral
   * that failed, at `untilMs`; false past the bound (its lease will expire).
   */
  remember(lease: DeliveryLease, untilMs?: number): boolean {
    if (this.#leases.size >= this.#max && !this.#leases.has(lease.deliveryId)) return false;
    this.#leases.set(lease.deliveryId, { lease, untilMs });
    return true;
  }

  /** A claim round failed: rows may be leased to this worker that it never saw. */
  claimFailed(): void {
    this.#claimInDoubt = true;
  }

  /**
   * Gives back what is remembered, due at `nowMs`; `held` names every claim the worker
   * still holds (queued or sending), which the orphan release must not touch. Throws while
   * the database is still down, keeping what is not yet given back for the next call.
   */
  async giveBack(nowMs: number, held: () => Iterable<string>): Promise<GiveBackResult> {
    const result: GiveBackResult = { givenBack: 0, expired: 0, untouched: 0, orphans: 0 };
    const due = [...this.#leases.values()].map(({ lease, untilMs }) => ({
      lease,
      untilMs: Math.max(nowMs, untilMs ?? nowMs),
    }));
    for (let start = 0; start < due.length; start += MAX_DEFERRAL_BATCH) {
      const batch = due.slice(start, start + MAX_DEFERRAL_BATCH);
      for (const write of await deferDeliveries(this.#db, batch, nowMs)) {
        this.#leases.delete(write.deliveryId);
        if (!write.won) result.untouched += 1;
        else if (write.state === "expired") result.expired += 1;
        else result.givenBack += 1;
      }
    }
    if (this.#claimInDoubt) {
      // The snapshot is taken just before the statement: no claim runs meanwhile (the caller's rounds are serial).
      const keep = [...held()];
      result.orphans = await releaseOrphanedLeases(this.#db, { workerId: this.#workerId, keep, nowMs });
      this.#claimInDoubt = false;
    }
    return result;
  }
}

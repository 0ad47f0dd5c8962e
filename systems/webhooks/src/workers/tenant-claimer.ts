/**
 * One claim round of per-tenant fair scheduling (WH-15, WH-21): which tenants have due
 * deliveries (dueCountsByTenant: one bounded index probe per tenant), how many slots each
 * gets (weighted deficit round robin, domain/tenant-shares.ts), and a claim within each
 * tenant for its share (claimDueForTenant: SKIP LOCKED + lease + version CAS, WH-10). A
 * flooding tenant gets the room the others leave, never the room they need: a global
 * FIFO (`claimDue` ordered by due time) would hand it every slot until its backlog drained.
 * Each tenant's claim is also capped by what it may still hold in the worker's window, so
 * one tenant's backlog never fills the window and stalls claiming for everyone else.
 *
 * @example
 * const claimer = new TenantClaimer(db, { workerId, clock, leaseMs: 45_000, httpDeadlineMs: 30_000 });
 * const round = await claimer.claim(64); // round.claimed: leased deliveries, round.weights: tenant → weight
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { TenantShares } from "../domain/tenant-shares.ts";
import {
  type ClaimedDelivery,
  claimDueForTenant,
  dueCountsByTenant,
  MAX_CLAIM_LIMIT,
} from "../store/delivery-claims.ts";

export interface TenantClaimerOptions {
  workerId: string;
  clock: Clock;
  leaseMs: number;
  httpDeadlineMs: number;
}

export interface ClaimRound {
  claimed: ClaimedDelivery[];
  /** Weight of every tenant that had due work (the in-process scheduler weighs by it too). */
  weights: Map<string, number>;
  /** Slots asked for. */
  asked: number;
  /** Due deliveries seen (capped per tenant at `room`). */
  due: number;
}

export class TenantClaimer {
  readonly #db: Queryable;
  readonly #options: TenantClaimerOptions;
  readonly #shares = new TenantShares();

  constructor(db: Queryable, options: TenantClaimerOptions) {
    this.#db = db;
    this.#options = options;
  }

  /**
   * Claims up to `room` due deliveries, split among tenants by weight; no tenant gets more
   * than `tenantRoom(tenantId)` (what it may still hold in this process's window).
   */
  async claim(room: number, tenantRoom: (tenantId: string) => number = () => room): Promise<ClaimRound> {
    const limit = Math.min(room, MAX_CLAIM_LIMIT);
    const { clock, workerId, leaseMs, httpDeadlineMs } = this.#options;
    if (limit < 1) return { claimed: [], weights: new Map(), asked: 0, due: 0 };
    const counted = await dueCountsByTenant(this.#db, { nowMs: clock.nowMs(), capPerTenant: limit });
    const weights = new Map(counted.map((d) => [d.tenantId, d.weight]));
    const due = counted.reduce((sum, d) => sum + d.due, 0);
    const demands = counted.map((d) => ({ ...d, due: Math.max(0, Math.min(d.due, tenantRoom(d.tenantId))) }));
    const claimed: ClaimedDelivery[] = [];
    for (const [tenantId, slots] of this.#shares.split(demands, limit)) {
      const got = await claimDueForTenant(this.#db, tenantId, {
        workerId,
        nowMs: clock.nowMs(),
        leaseMs,
        httpDeadlineMs,
        limit: slots,
      });
      claimed.push(...got);
    }
    return { claimed, weights, asked: limit, due };
  }
}

/**
 * Metrics queries (WH-24): the age of the oldest queued delivery per tenant — the number
 * that shows a backlog before any count does — and deliveries per state per tenant
 * (expired and quarantined are the "dropped" ones). Per tenant, so fairness is visible
 * (WH-15).
 *
 * Cost: the oldest age is one index probe per tenant (deliveries_queued_by_tenant). The
 * per-state count scans the deliveries table; at the rates of seed 003 (600k tasks/day)
 * a scrape every 15 s is affordable, beyond that it belongs in counters.
 *
 * @example
 * for (const t of await oldestQueuedAgeByTenant(db, clock.nowMs())) gauge.set({ tenant: t.tenantId }, t.ageMs / 1000);
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { DeliveryState } from "./delivery-results.ts";

export interface TenantQueueAge {
  tenantId: string;
  /** Age of the oldest pending or in-flight delivery, from its creation; 0 when none. */
  ageMs: number;
  queued: boolean;
}

/** Every tenant's oldest queued delivery age at `nowMs`. */
export async function oldestQueuedAgeByTenant(q: Queryable, nowMs: number): Promise<TenantQueueAge[]> {
  const { rows } = await q.query<{ tenant_id: string; oldest: Date | null }>(
    `SELECT t.id AS tenant_id,
            (SELECT d.created_at FROM deliveries d
              WHERE d.tenant_id = t.id AND d.state IN ('pending', 'in_flight')
              ORDER BY d.created_at LIMIT 1) AS oldest
       FROM tenants t ORDER BY t.id`,
  );
  return rows.map((r) => ({
    tenantId: r.tenant_id,
    ageMs: r.oldest === null ? 0 : Math.max(0, nowMs - r.oldest.getTime()),
    queued: r.oldest !== null,
  }));
}

export interface TenantStateCount {
  tenantId: string;
  state: DeliveryState;
  count: bigint;
}

/** Deliveries per (tenant, state); states with no delivery are absent. */
export async function deliveryCountsByTenant(q: Queryable): Promise<TenantStateCount[]> {
  const { rows } = await q.query<{ tenant_id: string; state: DeliveryState; n: bigint }>(
    "SELECT tenant_id, state, count(*) AS n FROM deliveries GROUP BY tenant_id, state ORDER BY tenant_id, state",
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, state: r.state, count: r.n }));
}

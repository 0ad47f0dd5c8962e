/**
 * Delivery claims (WH-10, WH-11, WH-03; schema: migrations/004_deliveries.sql).
 *
 * The deliveries table is a leased claim queue (`deliveryQueue`, infra lease-queue.ts).
 * A worker claims due deliveries with `FOR UPDATE SKIP LOCKED` — concurrent claimers take
 * disjoint rows without waiting — and puts a lease on each: owner, expiry, and a bumped
 * `lease_version`. Every later write of the worker (delivery-results.ts, send-check.ts)
 * is a compare-and-swap on (id, lease_version) that reports whether it won. A worker that
 * dies mid-delivery loses nothing: its rows stay `in_flight` until the lease ends, are
 * then due again (an in-flight row's `next_attempt_at` IS its lease end), and the next
 * claim bumps the version, so the dead worker's late write, if it ever comes, loses.
 *
 * The lease must outlast the HTTP deadline plus headroom for the result's write: shorter,
 * and a second worker claims and sends while the first still waits on the endpoint
 * (svix PR #2181). `claimDue` refuses such a configuration (WEBHOOK_LEASE_TOO_SHORT).
 *
 * Fair scheduling (WH-15, WH-21) is the caller's: `dueCountsByTenant` says cheaply which
 * tenants have due work and their weights, `claimDueForTenant` claims within one tenant,
 * so a weighted round robin above decides how many slots each tenant gets.
 *
 * Ordering (WH-03, opt-in per subscription): a delivery with an ordering key is claimable
 * only when no unfinished delivery of an OLDER event exists for the same subscription and
 * key — one in flight per key, in event order, head-of-line blocking accepted. Skip
 * policy: any final state (succeeded, failed, expired, quarantined, cancelled) unblocks
 * the next one; a delivery failing for good is skipped over, never retried forever. A head
 * past its deadline is not claimable and blocks its key until the retention sweeper
 * expires it (one sweeper interval). Order is the events' creation order (`seq`); two
 * events of one key created by concurrent transactions have no defined order, and one
 * that commits after its successor was already delivered is delivered after it.
 *
 * @example
 * const claimed = await claimDue(db, { workerId: "w1", nowMs, leaseMs: 45_000, httpDeadlineMs: 30_000, limit: 20 });
 * for (const d of claimed) { const plan = await loadForSend(db, d, clock.nowMs()); … }
 */
import { type Lease, LeaseQueue, type LeaseSql } from "@casebook/infra/sql/lease-queue";
import type { Queryable } from "@casebook/infra/sql/sql";
import { storeErrors } from "../errors.ts";

/** Time a worker needs after the HTTP deadline to write the result under its lease. */
export const LEASE_HEADROOM_MS = 1_000;
/** Largest claim: every row of it is leased for `leaseMs`, so a huge claim idles work. */
export const MAX_CLAIM_LIMIT = 1_000;
export const DEFAULT_DUE_COUNT_CAP = 1_000;

/** A worker's hold on one delivery: the token its writes compare-and-swap on. */
export interface DeliveryLease {
  deliveryId: string;
  leaseVersion: bigint;
  workerId: string;
  leaseExpiresAtMs: number;
}

export interface ClaimedDelivery extends DeliveryLease {
  eventId: string;
  subscriptionId: string;
  tenantId: string;
  /** Attempts made before this claim. */
  attempts: number;
  /** Client errors in a row so far (the delivery core's quarantine input, WH-16). */
  clientErrorStreak: number;
  deadlineAtMs: number;
  orderingKey: string | null;
  /** The owner whose expired lease this claim took over (WH-11), or null. */
  previousOwner: string | null;
}

export interface ClaimOptions {
  workerId: string;
  nowMs: number;
  leaseMs: number;
  /** The sender's whole-request deadline; the lease must exceed it by LEASE_HEADROOM_MS. */
  httpDeadlineMs: number;
  /** 1..MAX_CLAIM_LIMIT deliveries. */
  limit: number;
  /** Claim only this tenant's deliveries (fair scheduling). */
  tenantId?: string;
}

/** Throws WEBHOOK_LEASE_TOO_SHORT unless `leaseMs` ≥ `httpDeadlineMs` + LEASE_HEADROOM_MS. */
export function checkLease(leaseMs: number, httpDeadlineMs: number): void {
  if (!Number.isInteger(httpDeadlineMs) || httpDeadlineMs < 1)
    throw new RangeError(`httpDeadlineMs must be an integer >= 1, got ${httpDeadlineMs}`);
  const minLeaseMs = httpDeadlineMs + LEASE_HEADROOM_MS;
  if (!Number.isInteger(leaseMs) || leaseMs < minLeaseMs) {
    throw storeErrors.create("WEBHOOK_LEASE_TOO_SHORT", { fields: { leaseMs, httpDeadlineMs, minLeaseMs } });
  }
}

interface ClaimRow {
  id: string;
  event_id: string;
  subscription_id: string;
  tenant_id: string;
  state: string;
  attempts: number;
  client_error_streak: number;
  deadline_at: Date;
  ordering_key: string | null;
}

/**
 * The deliveries table as a leased claim queue (infra lease-queue.ts): the lease mechanics
 * are the queue's, the rules here are the system's. Claimable: pending, or in flight with an
 * expired lease (an in-flight row's `next_attempt_at` IS its lease end: `dueAtLeaseEnd`),
 * never past its deadline; the NOT EXISTS is the WH-03 head rule. Held: `in_flight`.
 */
export const deliveryQueue = new LeaseQueue<ClaimRow, string>({
  table: "deliveries",
  idType: "text",
  claimable: (p) => `t.state IN ('pending', 'in_flight') AND t.deadline_at > ${p.now}
       AND (t.ordering_key IS NULL OR NOT EXISTS (
             SELECT 1 FROM deliveries h
              WHERE h.subscription_id = t.subscription_id AND h.ordering_key = t.ordering_key
                AND h.state IN ('pending', 'in_flight') AND h.event_seq < t.event_seq))`,
  held: "t.state = 'in_flight'",
  order: "t.next_attempt_at",
  returning: `t.id, t.event_id, t.subscription_id, t.tenant_id, t.state, t.attempts, t.client_error_streak,
              t.deadline_at, t.ordering_key`,
  onClaim: (p) => `state = 'in_flight', updated_at = ${p.now}`,
  onRelease: (p) => `state = 'pending', updated_at = ${p.now}`,
  onRenew: (p) => `updated_at = ${p.now}`,
  dueAtLeaseEnd: true,
  minLeaseMs: LEASE_HEADROOM_MS + 1,
  maxClaimLimit: MAX_CLAIM_LIMIT,
});

/** The queue's lease of a delivery lease (the system names its fields for the domain). */
export function queueLease(lease: DeliveryLease): Lease<string> {
  return {
    id: lease.deliveryId,
    leaseVersion: lease.leaseVersion,
    owner: lease.workerId,
    leaseExpiresAtMs: lease.leaseExpiresAtMs,
  };
}

/**
 * Claims up to `limit` due deliveries (pending and due, or in flight with an expired
 * lease; never past their deadline), oldest due first, for `leaseMs`.
 */
export async function claimDue(q: Queryable, options: ClaimOptions): Promise<ClaimedDelivery[]> {
  checkLease(options.leaseMs, options.httpDeadlineMs);
  const tenantId = options.tenantId;
  const claimed = await deliveryQueue.claim(q, {
    owner: options.workerId,
    nowMs: options.nowMs,
    leaseMs: options.leaseMs,
    minLeaseMs: options.httpDeadlineMs + LEASE_HEADROOM_MS,
    limit: options.limit,
    ...(tenantId === undefined ? {} : { where: (p: LeaseSql) => `t.tenant_id = ${p.add(tenantId)}` }),
  });
  return claimed.map(({ lease, previousOwner, row: r }) => ({
    deliveryId: lease.id,
    leaseVersion: lease.leaseVersion,
    workerId: lease.owner,
    leaseExpiresAtMs: lease.leaseExpiresAtMs,
    eventId: r.event_id,
    subscriptionId: r.subscription_id,
    tenantId: r.tenant_id,
    attempts: r.attempts,
    clientErrorStreak: r.client_error_streak,
    deadlineAtMs: r.deadline_at.getTime(),
    orderingKey: r.ordering_key,
    previousOwner,
  }));
}

/** `claimDue` within one tenant: the building block of per-tenant fair scheduling. */
export function claimDueForTenant(
  q: Queryable,
  tenantId: string,
  options: Omit<ClaimOptions, "tenantId">,
): Promise<ClaimedDelivery[]> {
  return claimDue(q, { ...options, tenantId });
}

export interface TenantDue {
  tenantId: string;
  weight: number;
  /** Due deliveries, counted up to the cap (ordering-blocked ones included: an upper bound). */
  due: number;
}

/**
 * Tenants with due deliveries, their weights and due counts capped at `capPerTenant`: one
 * bounded index probe per tenant, so a scheduler can poll it every round.
 */
export async function dueCountsByTenant(
  q: Queryable,
  options: { nowMs: number; capPerTenant?: number },
): Promise<TenantDue[]> {
  const cap = options.capPerTenant ?? DEFAULT_DUE_COUNT_CAP;
  if (!Number.isInteger(cap) || cap < 1) throw new RangeError(`capPerTenant must be >= 1, got ${cap}`);
  const { rows } = await q.query<{ tenant_id: string; weight: number; due: bigint }>(
    `SELECT t.id AS tenant_id, t.weight, c.due FROM tenants t
       CROSS JOIN LATERAL (
         SELECT count(*) AS due FROM (
           SELECT 1 FROM deliveries d
            WHERE d.tenant_id = t.id AND d.state IN ('pending', 'in_flight')
              AND d.next_attempt_at <= $1 AND d.deadline_at > $1
            LIMIT $2) AS capped) AS c
      WHERE c.due > 0 ORDER BY t.id`,
    [new Date(options.nowMs), cap],
  );
  return rows.map((r) => ({ tenantId: r.tenant_id, weight: r.weight, due: Number(r.due) }));
}

/** Extends a live lease by `leaseMs` from `nowMs` (a long send); undefined when the lease was lost. */
export async function renewLease<L extends DeliveryLease>(
  q: Queryable,
  lease: L,
  options: { nowMs: number; leaseMs: number; httpDeadlineMs: number },
): Promise<L | undefined> {
  checkLease(options.leaseMs, options.httpDeadlineMs);
  const renewed = await deliveryQueue.renew(q, queueLease(lease), {
    nowMs: options.nowMs,
    leaseMs: options.leaseMs,
    minLeaseMs: options.httpDeadlineMs + LEASE_HEADROOM_MS,
  });
  return renewed === undefined ? undefined : { ...lease, leaseExpiresAtMs: renewed.leaseExpiresAtMs };
}

/** Gives a delivery back unattempted (shutdown): due again at once; false when the lease was lost. */
export function releaseLease(q: Queryable, lease: DeliveryLease, nowMs: number): Promise<boolean> {
  return deliveryQueue.release(q, queueLease(lease), nowMs);
}

/**
 * Gives back, due at once, every delivery leased to `workerId` except those in `keep`: the
 * claims of a claim statement whose answer was lost (the database went away after it
 * committed), which the worker never saw and so cannot name by lease version. Fenced by
 * the owner: a delivery another worker has claimed since is not this worker's any more.
 * Only the worker itself may call this, between its claim rounds, with `keep` = every
 * claim it holds. Returns how many it gave back.
 */
export function releaseOrphanedLeases(
  q: Queryable,
  options: { workerId: string; keep: readonly string[]; nowMs: number },
): Promise<number> {
  return deliveryQueue.releaseOrphaned(q, {
    owner: options.workerId,
    keep: options.keep,
    nowMs: options.nowMs,
  });
}

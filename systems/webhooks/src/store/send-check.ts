/**
 * The re-check just before sending (WH-04, WH-18): a delivery was queued under the
 * subscription and event as they were then; the worker must send under the policy as it
 * is NOW. `loadForSend` reads, in one statement, the delivery (is my lease still
 * current?), the subscription's CURRENT state (active? url? live secrets?) and the
 * payload, and answers either "send this" or "don't, because…". When the answer is a
 * final "don't", it also settles the delivery under the caller's lease:
 *
 * - subscription disabled since → `cancelled` (nothing is sent, WH-04);
 * - deadline passed → `expired` (no attempt starts past the window, WH-18);
 * - payload deleted by retention → `expired` (WH-22).
 *
 * What remains is the window between this read and the request itself (one send): a
 * subscription disabled inside it receives that one request. The lease is also required
 * to be live: a worker that stalled past its lease must not send, since another worker
 * may be claiming the delivery right now.
 *
 * `loadForSendBatch` answers for many claimed deliveries in one statement: a worker that
 * sends many requests at once reads their plans in one round trip instead of one each;
 * `loadForSend` is the batch form with a batch of one, so the rules live in one place.
 *
 * @example
 * const plan = await loadForSend(db, claimed, clock.nowMs());
 * if (plan.send) await sender.send(plan.url, plan.secrets, body(plan));
 * const plans = await loadForSendBatch(db, claimed, clock.nowMs());
 * plans.forEach((plan, i) => plan.send ? send(plan) : skip(claimed[i], plan.reason));
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { EndpointSeen, SubscriptionStatus } from "../domain/endpoint-health.ts";
import type { DeliveryLease } from "./delivery-claims.ts";
import { finishWithoutAttempt } from "./delivery-results.ts";
import type { SigningSecret } from "./subscription-repository.ts";

/** Most deliveries checked in one statement. */
export const MAX_SEND_CHECK_BATCH = 1_000;

export type SkipReason = "lease_lost" | "subscription_inactive" | "deadline_passed" | "payload_expired";

export interface SendGo {
  send: true;
  lease: DeliveryLease;
  tenantId: string;
  /** Stable `webhook-id` (WH-14). */
  eventId: string;
  eventType: string;
  eventCreatedAtMs: number;
  payload: Record<string, unknown>;
  subscriptionId: string;
  url: string;
  /** Live secrets, newest first: sign with all of them during a rotation overlap. */
  secrets: SigningSecret[];
  rateLimitPerS: number | null;
  maxConcurrency: number;
  /** The number this attempt will be recorded under. */
  attemptNo: number;
  /** This delivery's client errors in a row before this attempt. */
  clientErrorStreak: number;
  /** The subscription's status and client-error streak now: the worker skips health writes that change nothing. */
  endpoint: EndpointSeen;
  deadlineAtMs: number;
}

export interface SendSkip {
  send: false;
  reason: SkipReason;
  /** True when this call settled the delivery (cancelled/expired); false for `lease_lost`. */
  settled: boolean;
}

export type SendPlan = SendGo | SendSkip;

/** The plan for one claimed delivery at `nowMs`: send (with everything needed) or skip (and why). */
export async function loadForSend(q: Queryable, lease: DeliveryLease, nowMs: number): Promise<SendPlan> {
  // One rule set: the batch form with a batch of one.
  const [plan] = await loadForSendBatch(q, [lease], nowMs);
  return plan!;
}

interface BatchRow {
  id: string;
  state: string;
  lease_version: bigint;
  lease_expires_at: Date | null;
  tenant_id: string;
  event_id: string;
  subscription_id: string;
  attempts: number;
  client_error_streak: number;
  deadline_at: Date;
  type: string;
  payload: Record<string, unknown> | null;
  payload_expires_at: Date;
  event_created_at: Date;
  url: string;
  active: boolean;
  status: SubscriptionStatus;
  client_errors: number;
  rate_limit_per_s: number | null;
  max_concurrency: number;
  secrets: SigningSecret[] | null;
}

const LOAD_MANY = `
  SELECT d.id, d.state, d.lease_version, d.lease_expires_at, d.tenant_id, d.event_id, d.subscription_id,
         d.attempts, d.client_error_streak, d.deadline_at, e.type, e.payload, e.payload_expires_at,
         e.created_at AS event_created_at, s.url, s.active, s.status, s.client_errors,
         s.rate_limit_per_s, s.max_concurrency,
         (SELECT json_agg(json_build_object('version', v.version, 'secret', v.secret) ORDER BY v.version DESC)
            FROM subscription_secrets v
           WHERE v.subscription_id = s.id AND (v.expires_at IS NULL OR v.expires_at > $2)) AS secrets
    FROM deliveries d
    JOIN events e ON e.id = d.event_id
    JOIN subscriptions s ON s.id = d.subscription_id
   WHERE d.id = ANY($1::text[])`;

function leaseCurrent(row: BatchRow, lease: DeliveryLease, nowMs: number): boolean {
  return (
    row.state === "in_flight" &&
    row.lease_version === lease.leaseVersion &&
    row.lease_expires_at !== null &&
    row.lease_expires_at.getTime() > nowMs
  );
}

function skipReason(row: BatchRow, nowMs: number): Exclude<SkipReason, "lease_lost"> | undefined {
  if (!row.active) return "subscription_inactive";
  if (row.deadline_at.getTime() <= nowMs) return "deadline_passed";
  if (row.payload === null || row.payload_expires_at.getTime() <= nowMs) return "payload_expired";
  return undefined;
}

async function planOf(
  q: Queryable,
  row: BatchRow | undefined,
  lease: DeliveryLease,
  nowMs: number,
): Promise<SendPlan> {
  if (!row || !leaseCurrent(row, lease, nowMs)) return { send: false, reason: "lease_lost", settled: false };
  const reason = skipReason(row, nowMs);
  if (reason !== undefined) {
    const state = reason === "subscription_inactive" ? "cancelled" : "expired";
    const settled = await finishWithoutAttempt(q, lease, { state, reason, nowMs });
    return { send: false, reason: settled ? reason : "lease_lost", settled };
  }
  return {
    send: true,
    lease,
    tenantId: row.tenant_id,
    eventId: row.event_id,
    eventType: row.type,
    eventCreatedAtMs: row.event_created_at.getTime(),
    payload: row.payload!,
    subscriptionId: row.subscription_id,
    url: row.url,
    secrets: row.secrets ?? [],
    rateLimitPerS: row.rate_limit_per_s,
    maxConcurrency: row.max_concurrency,
    attemptNo: row.attempts + 1,
    clientErrorStreak: row.client_error_streak,
    endpoint: { status: row.status, clientErrors: row.client_errors },
    deadlineAtMs: row.deadline_at.getTime(),
  };
}

/** The plan of each lease at `nowMs`, in input order. */
export async function loadForSendBatch(
  q: Queryable,
  leases: readonly DeliveryLease[],
  nowMs: number,
): Promise<SendPlan[]> {
  if (leases.length === 0) return [];
  if (leases.length > MAX_SEND_CHECK_BATCH)
    throw new RangeError(`at most ${MAX_SEND_CHECK_BATCH} deliveries per check`);
  const { rows } = await q.query<BatchRow>(LOAD_MANY, [leases.map((l) => l.deliveryId), new Date(nowMs)]);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const plans: SendPlan[] = [];
  // Skips settle one by one (rare: a disabled endpoint, a passed deadline); sends need nothing more.
  for (const lease of leases) plans.push(await planOf(q, byId.get(lease.deliveryId), lease, nowMs));
  return plans;
}

/**
 * `loadForSend` for many claimed deliveries in one statement (WH-04, WH-18): the same
 * re-check just before sending — lease still current, subscription active, deadline not
 * passed, payload still there — and the same answers, send or skip (and why), with skips
 * settled under the caller's lease (`cancelled`/`expired`), as send-check.ts describes.
 * A worker that sends many requests at once reads their plans in one round trip instead
 * of one each; `loadForSend` is this with a batch of one, so the rules live here only.
 *
 * @example
 * const plans = await loadForSendBatch(db, claimed, clock.nowMs());
 * plans.forEach((plan, i) => plan.send ? send(plan) : skip(claimed[i], plan.reason));
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { SubscriptionStatus } from "../domain/endpoint-health.ts";
import type { DeliveryLease } from "./delivery-claims.ts";
import { finishWithoutAttempt } from "./delivery-results.ts";
import type { SendPlan, SkipReason } from "./send-check.ts";
import type { SigningSecret } from "./subscription-repository.ts";

/** Most deliveries checked in one statement. */
export const MAX_SEND_CHECK_BATCH = 1_000;

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

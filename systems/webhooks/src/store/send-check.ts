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
 * @example
 * const plan = await loadForSend(db, claimed, clock.nowMs());
 * if (plan.send) await sender.send(plan.url, plan.secrets, body(plan));
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { EndpointSeen } from "../domain/endpoint-health.ts";
import type { DeliveryLease } from "./delivery-claims.ts";
import { loadForSendBatch } from "./send-check-batch.ts";
import type { SigningSecret } from "./subscription-repository.ts";

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
  // One rule set: the batch form (send-check-batch.ts) with a batch of one.
  const [plan] = await loadForSendBatch(q, [lease], nowMs);
  return plan!;
}

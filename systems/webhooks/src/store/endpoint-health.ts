/**
 * The subscription's status as attempts change it (WH-16; the rules: domain/endpoint-health.ts,
 * the columns: migrations/008_subscription_status.sql), and the event that tells the tenant
 * when the system itself switched an endpoint off.
 *
 * - `recordEndpointHealth` applies one attempt's signal: a 2xx makes it `active` again and
 *   clears the streak; a failure makes it `failing` (keeping `failing_since`), a client error
 *   adds to the streak, any other failure ends the streak. It returns the streak after the
 *   attempt — the delivery core's quarantine input — or undefined when the subscription is no
 *   longer on (quarantined or disabled meanwhile: nothing to count). Workers racing on one
 *   endpoint each increment under the row lock, so no client error is lost.
 * - `switchOffSubscription` quarantines or disables it (410 Gone) and, in the SAME
 *   transaction, writes a `webhook.subscription.quarantined` / `.disabled` event through the
 *   outbox (WH-07): it reaches every other active subscription of the tenant whose filters
 *   select it (Svix's operational webhooks, in this system's own event stream), at least
 *   once, and exactly one such event exists per switch-off, however many workers saw the
 *   failure — the UPDATE only matches while the subscription is still on.
 *
 * @example
 * const streak = await recordEndpointHealth(db, { tenantId, subscriptionId, signal: "client_error",
 *   reason: "4xx 403", nowMs });
 * if (outcome.subscriptionAction === "quarantine")
 *   await switchOffSubscription(db, { tenantId, subscriptionId, status: "quarantined", reason, nowMs, randomBytes });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { EndpointStreak, HealthSignal } from "../domain/endpoint-health.ts";
import type { RandomBytes } from "../domain/store-ids.ts";
import { enqueue } from "./event-repository.ts";
import { MAX_REASON_CHARS } from "./subscription-repository.ts";

/** Event types of the system's own notices; tenants subscribe with `webhook.subscription.*`. */
export const SUBSCRIPTION_EVENT_TYPES = {
  quarantined: "webhook.subscription.quarantined",
  disabled: "webhook.subscription.disabled",
} as const;

// Every CASE reads the row as it was: the signal decides each column from its old value.
const RECORD = `
  UPDATE subscriptions
     SET status = CASE WHEN $3 = 'success' THEN 'active' ELSE 'failing' END,
         failing_since = CASE WHEN $3 = 'success' THEN NULL ELSE COALESCE(failing_since, $5) END,
         status_reason = CASE WHEN $3 = 'success' THEN NULL
                              WHEN status = 'active' OR $3 = 'client_error' THEN $4
                              ELSE status_reason END,
         client_errors = CASE WHEN $3 = 'client_error' THEN client_errors + 1 ELSE 0 END,
         client_errors_since = CASE WHEN $3 = 'client_error' THEN COALESCE(client_errors_since, $5) END
   WHERE id = $1 AND tenant_id = $2 AND status IN ('active', 'failing')
  RETURNING client_errors, client_errors_since`;

/** Applies one attempt's signal; the endpoint's streak after it, or undefined when it is switched off. */
export async function recordEndpointHealth(
  q: Queryable,
  input: { tenantId: string; subscriptionId: string; signal: HealthSignal; reason: string; nowMs: number },
): Promise<EndpointStreak | undefined> {
  const { rows } = await q.query<{ client_errors: number; client_errors_since: Date | null }>(RECORD, [
    input.subscriptionId,
    input.tenantId,
    input.signal,
    input.reason.slice(0, MAX_REASON_CHARS),
    new Date(input.nowMs),
  ]);
  const row = rows[0];
  if (!row) return undefined;
  return { clientErrors: row.client_errors, clientErrorsSinceMs: row.client_errors_since?.getTime() ?? null };
}

const SWITCH_OFF = `
  UPDATE subscriptions
     SET active = false, status = $3, status_reason = $4, disabled_reason = $4, updated_at = $5
   WHERE id = $1 AND tenant_id = $2 AND status IN ('active', 'failing')
  RETURNING url, failing_since, client_errors, client_errors_since`;

interface SwitchedRow {
  url: string;
  failing_since: Date | null;
  client_errors: number;
  client_errors_since: Date | null;
}

/**
 * Quarantines or disables the subscription and queues the tenant's notice, in one
 * transaction. The event id when this call switched it off; undefined when it was already off.
 */
export async function switchOffSubscription(
  db: Database,
  input: {
    tenantId: string;
    subscriptionId: string;
    status: "quarantined" | "disabled";
    reason: string;
    nowMs: number;
    randomBytes: RandomBytes;
  },
): Promise<string | undefined> {
  const reason = input.reason.slice(0, MAX_REASON_CHARS);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<SwitchedRow>(SWITCH_OFF, [
      input.subscriptionId,
      input.tenantId,
      input.status,
      reason,
      new Date(input.nowMs),
    ]);
    const row = rows[0];
    if (!row) return undefined;
    const payload = {
      subscriptionId: input.subscriptionId,
      url: row.url,
      status: input.status,
      reason,
      failingSince: row.failing_since?.toISOString() ?? null,
      clientErrors: row.client_errors,
      clientErrorsSince: row.client_errors_since?.toISOString() ?? null,
      at: new Date(input.nowMs).toISOString(),
    };
    const type = SUBSCRIPTION_EVENT_TYPES[input.status];
    const event = await enqueue(tx, input.tenantId, { type, payload }, input);
    return event.eventId;
  });
}

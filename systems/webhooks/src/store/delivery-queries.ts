/**
 * What a tenant may read about its deliveries, and replay (WH-12, WH-22). Every query
 * carries `tenant_id = $n`: another tenant's delivery id answers exactly like an id that
 * does not exist (undefined → the API's 404), so ids cannot be probed. Listings are
 * keyset-paged (pagination.ts): deliveries newest first on (created_at, id), attempts in
 * attempt order.
 *
 * Replay starts a new attempt cycle for a finished delivery, keeping its id and its
 * event's id (the receiver's dedupe key, WH-14): due now, a fresh deadline (the tenant's
 * window, never beyond the payload's expiry), attempt numbers continuing. Refused with a
 * typed error when the payload is gone (WEBHOOK_REPLAY_PAYLOAD_EXPIRED, WH-22), when the
 * delivery is still being attempted, or when its subscription is disabled.
 *
 * @example
 * const page = await listDeliveries(db, tenantId, { state: "failed", limit: 20 });
 * await replayDelivery(db, tenantId, page.items[0].id, { nowMs });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { decodeCursor, encodeCursor } from "../domain/store-cursor.ts";
import { isId } from "../domain/store-ids.ts";
import { storeErrors } from "../errors.ts";
import type { DeliveryState } from "./delivery-results.ts";
import { type Page, type PageRequest, pageLimit, toPage } from "./pagination.ts";

export interface DeliveryView {
  id: string;
  eventId: string;
  eventType: string;
  subscriptionId: string;
  state: DeliveryState;
  attempts: number;
  /** When the next attempt is due; null once final. */
  nextAttemptAt: Date | null;
  deadlineAt: Date;
  lastStatus: number | null;
  lastAttemptAt: Date | null;
  stateReason: string | null;
  orderingKey: string | null;
  replays: number;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface AttemptView {
  attemptNo: number;
  startedAt: Date;
  durationMs: number;
  responseClass: string;
  status: number | null;
  errorPhase: string | null;
  error: string | null;
}

export interface DeliveryFilter extends PageRequest {
  state?: DeliveryState;
  subscriptionId?: string;
  eventId?: string;
}

interface DeliveryRow {
  id: string;
  event_id: string;
  type: string;
  subscription_id: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: Date;
  deadline_at: Date;
  last_status: number | null;
  last_attempt_at: Date | null;
  state_reason: string | null;
  ordering_key: string | null;
  replays: number;
  created_at: Date;
  finished_at: Date | null;
}

const DELIVERY_COLUMNS = `d.id, d.event_id, e.type, d.subscription_id, d.state, d.attempts, d.next_attempt_at,
  d.deadline_at, d.last_status, d.last_attempt_at, d.state_reason, d.ordering_key, d.replays, d.created_at,
  d.finished_at`;

function toDelivery(r: DeliveryRow): DeliveryView {
  const open = r.state === "pending" || r.state === "in_flight";
  return {
    id: r.id,
    eventId: r.event_id,
    eventType: r.type,
    subscriptionId: r.subscription_id,
    state: r.state,
    attempts: r.attempts,
    nextAttemptAt: open ? r.next_attempt_at : null,
    deadlineAt: r.deadline_at,
    lastStatus: r.last_status,
    lastAttemptAt: r.last_attempt_at,
    stateReason: r.state_reason,
    orderingKey: r.ordering_key,
    replays: r.replays,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

/** The tenant's delivery `id`, or undefined (absent or another tenant's). */
export async function getDelivery(
  q: Queryable,
  tenantId: string,
  id: string,
): Promise<DeliveryView | undefined> {
  if (!isId("dlv", id)) return undefined;
  const { rows } = await q.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.id = $1 AND d.tenant_id = $2`,
    [id, tenantId],
  );
  return rows[0] ? toDelivery(rows[0]) : undefined;
}

const DELIVERIES = "deliveries";

/** The tenant's deliveries, newest first, optionally filtered; keyset-paged. */
export async function listDeliveries(
  q: Queryable,
  tenantId: string,
  filter: DeliveryFilter = {},
): Promise<Page<DeliveryView>> {
  const limit = pageLimit(filter.limit, DELIVERIES);
  const before =
    filter.cursor === undefined
      ? null
      : decodeCursor(DELIVERIES, filter.cursor, ["number", "string"] as const);
  const { rows } = await q.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id
      WHERE d.tenant_id = $1
        AND ($2::timestamptz IS NULL OR (d.created_at, d.id) < ($2::timestamptz, $3::text))
        AND ($4::text IS NULL OR d.state = $4) AND ($5::text IS NULL OR d.subscription_id = $5)
        AND ($6::text IS NULL OR d.event_id = $6)
      ORDER BY d.created_at DESC, d.id DESC LIMIT $7`,
    [
      tenantId,
      before ? new Date(before[0]) : null,
      before ? before[1] : null,
      filter.state ?? null,
      filter.subscriptionId ?? null,
      filter.eventId ?? null,
      limit + 1,
    ],
  );
  return toPage(rows, limit, toDelivery, (r) => encodeCursor(DELIVERIES, [r.created_at.getTime(), r.id]));
}

const ATTEMPTS = "attempts";

/** The attempts of the tenant's delivery `deliveryId` in order; undefined when the delivery is not theirs. */
export async function listAttempts(
  q: Queryable,
  tenantId: string,
  deliveryId: string,
  request: PageRequest = {},
): Promise<Page<AttemptView> | undefined> {
  const limit = pageLimit(request.limit, ATTEMPTS);
  const after =
    request.cursor === undefined ? null : decodeCursor(ATTEMPTS, request.cursor, ["number"] as const);
  if (!isId("dlv", deliveryId)) return undefined;
  const owned = await q.query("SELECT 1 FROM deliveries WHERE id = $1 AND tenant_id = $2", [
    deliveryId,
    tenantId,
  ]);
  if (owned.rowCount === 0) return undefined;
  const { rows } = await q.query<{
    attempt_no: number;
    started_at: Date;
    duration_ms: number;
    response_class: string;
    status: number | null;
    error_phase: string | null;
    error: string | null;
  }>(
    `SELECT attempt_no, started_at, duration_ms, response_class, status, error_phase, error FROM attempts
      WHERE delivery_id = $1 AND tenant_id = $2 AND attempt_no > $3 ORDER BY attempt_no LIMIT $4`,
    [deliveryId, tenantId, after ? after[0] : 0, limit + 1],
  );
  return toPage(
    rows,
    limit,
    (r) => ({
      attemptNo: r.attempt_no,
      startedAt: r.started_at,
      durationMs: r.duration_ms,
      responseClass: r.response_class,
      status: r.status,
      errorPhase: r.error_phase,
      error: r.error,
    }),
    (r) => encodeCursor(ATTEMPTS, [r.attempt_no]),
  );
}

interface ReplayRow {
  state: DeliveryState;
  payload_gone: boolean;
  payload_expires_at: Date;
  active: boolean;
  disabled_reason: string | null;
  delivery_window_s: number;
}

function refuseReplay(id: string, row: ReplayRow | undefined, nowMs: number): Error | undefined {
  if (!row) return storeErrors.create("WEBHOOK_DELIVERY_NOT_FOUND", { fields: { id } });
  if (row.state === "pending" || row.state === "in_flight")
    return storeErrors.create("WEBHOOK_DELIVERY_IN_PROGRESS", { fields: { id, state: row.state } });
  if (row.payload_gone || row.payload_expires_at.getTime() <= nowMs)
    return storeErrors.create("WEBHOOK_REPLAY_PAYLOAD_EXPIRED", {
      fields: { id, payloadExpiredAt: row.payload_expires_at.toISOString() },
    });
  if (!row.active)
    return storeErrors.create("WEBHOOK_SUBSCRIPTION_INACTIVE", {
      fields: { id, reason: row.disabled_reason },
    });
  return undefined;
}

/**
 * Replays the tenant's finished delivery `id` (see the module comment). Throws
 * WEBHOOK_DELIVERY_NOT_FOUND (absent or another tenant's), WEBHOOK_DELIVERY_IN_PROGRESS,
 * WEBHOOK_REPLAY_PAYLOAD_EXPIRED, WEBHOOK_SUBSCRIPTION_INACTIVE.
 */
export async function replayDelivery(
  db: Database,
  tenantId: string,
  id: string,
  options: { nowMs: number },
): Promise<DeliveryView> {
  if (!isId("dlv", id)) throw storeErrors.create("WEBHOOK_DELIVERY_NOT_FOUND", { fields: { id } });
  const now = new Date(options.nowMs);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<ReplayRow>(
      `SELECT d.state, e.payload IS NULL AS payload_gone, e.payload_expires_at, s.active, s.disabled_reason,
              t.delivery_window_s
         FROM deliveries d JOIN events e ON e.id = d.event_id JOIN subscriptions s ON s.id = d.subscription_id
         JOIN tenants t ON t.id = d.tenant_id
        WHERE d.id = $1 AND d.tenant_id = $2 FOR UPDATE OF d`,
      [id, tenantId],
    );
    const refused = refuseReplay(id, rows[0], options.nowMs);
    if (refused) throw refused;
    const row = rows[0]!;
    const deadlineMs = Math.min(
      options.nowMs + row.delivery_window_s * 1_000,
      row.payload_expires_at.getTime(),
    );
    await tx.query(
      `UPDATE deliveries SET state = 'pending', next_attempt_at = $2, deadline_at = $3, state_reason = NULL,
              finished_at = NULL, client_error_streak = 0, replays = replays + 1, lease_version = lease_version + 1, updated_at = $2
        WHERE id = $1`,
      [id, now, new Date(deadlineMs)],
    );
    const { rows: updated } = await tx.query<DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = $1`,
      [id],
    );
    return toDelivery(updated[0]!);
  });
}

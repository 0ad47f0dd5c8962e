/**
 * Events and their way into the transactional outbox (WH-07; schema: migrations/003_events.sql).
 *
 * `enqueue(tx, …)` is what a producer sharing this database calls INSIDE its own
 * transaction, beside its business change: the event and its outbox row commit with that
 * change or not at all — no dual write, no phantom or lost event. `ingestEvent` is the
 * same in a transaction of its own, for producers that call the API instead.
 *
 * A 503 from `ingestEvent` whose link broke on COMMIT carries `eventOutcome: "unknown"`:
 * only then may the event have been stored (see eventInDoubt).
 *
 * Idempotency: an event may carry a key (the one Idempotency-Key rule, @casebook/kit/idempotency-key:
 * 1-255 visible ASCII), unique per tenant. The same key again returns the
 * first event's id (`created: false`); the same key with a different type or payload is
 * WEBHOOK_IDEMPOTENCY_CONFLICT. Payloads are compared by the sha256 of their jsonb text
 * (key order and whitespace normalised), which outlives the payload itself (WH-22), so a
 * late retry is still recognised after retention deleted the body.
 *
 * @example
 * await db.transaction(async (tx) => {
 *   await tx.query("UPDATE invoices SET paid = true WHERE id = $1", [invoiceId]);
 *   await enqueue(tx, tenantId, { type: "invoice.paid", payload: { invoiceId } }, { nowMs, randomBytes });
 * });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import type { CasebookError } from "@casebook/kit/errors";
import { isIdempotencyKey } from "@casebook/kit/idempotency-key";
import { checkEventType } from "../domain/store-event-type.ts";
import { isId, newId } from "../domain/store-ids.ts";
import { storeErrors } from "../errors.ts";
import type { WriteContext } from "./tenant-repository.ts";

/** Largest payload accepted unless told otherwise, in bytes of its JSON text. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024;

export interface NewEvent {
  /** Dotted name, `invoice.paid`. */
  type: string;
  /** A JSON object; bigints are written as decimal strings. */
  payload: Record<string, unknown>;
  /** Same key, same event: a retried request creates nothing new. */
  idempotencyKey?: string;
}

export interface EnqueueContext extends WriteContext {
  /** Bound on the payload's JSON text, in bytes; default DEFAULT_MAX_PAYLOAD_BYTES. */
  maxPayloadBytes?: number;
}

export interface EnqueuedEvent {
  /** Stable id (`msg_…`): the `webhook-id` of every attempt, the receiver's dedupe key. */
  eventId: string;
  /** False when an earlier event with the same idempotency key was returned. */
  created: boolean;
  createdAt: Date;
}

export interface StoredEvent {
  id: string;
  tenantId: string;
  type: string;
  /** null once retention deleted it (WH-22). */
  payload: Record<string, unknown> | null;
  payloadBytes: number;
  payloadExpiresAt: Date;
  idempotencyKey: string | null;
  createdAt: Date;
}

function invalid(field: string): Error {
  return storeErrors.create("WEBHOOK_EVENT_INVALID", { fields: { field } });
}

/** The payload's JSON text (bigints as strings) within `maxBytes`. */
function payloadText(payload: unknown, maxBytes: number): string {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) throw invalid("payload");
  let text: string;
  try {
    text = JSON.stringify(payload, (_key, value) => (typeof value === "bigint" ? value.toString() : value));
  } catch {
    throw invalid("payload"); // cycles and the like: not JSON
  }
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) throw storeErrors.create("WEBHOOK_EVENT_TOO_LARGE", { fields: { bytes, maxBytes } });
  return text;
}

function checkKey(key: unknown): string | null {
  if (key === undefined || key === null) return null;
  if (!isIdempotencyKey(key)) throw invalid("idempotencyKey");
  return key;
}

// One statement: the event and its outbox row, or neither (a key conflict inserts nothing).
const INSERT = `
  WITH inserted AS (
    INSERT INTO events (id, tenant_id, type, payload, payload_hash, payload_bytes, payload_expires_at,
                        idempotency_key, created_at)
    SELECT $1, t.id, $3, $4::jsonb, encode(sha256(convert_to($4::jsonb::text, 'UTF8')), 'hex'), $5,
           $6::timestamptz + make_interval(secs => t.payload_retention_s), $7, $6
      FROM tenants t WHERE t.id = $2
    ON CONFLICT (tenant_id, idempotency_key) DO NOTHING
    RETURNING id, created_at
  ), queued AS (
    INSERT INTO outbox (event_id, tenant_id, created_at, next_attempt_at)
    SELECT id, $2, created_at, created_at FROM inserted
  )
  SELECT id, created_at FROM inserted`;

const EXISTING = `
  SELECT id, type, created_at,
         payload_hash = encode(sha256(convert_to($3::jsonb::text, 'UTF8')), 'hex') AS same_payload
    FROM events WHERE tenant_id = $1 AND idempotency_key = $2`;

/**
 * Writes `event` and its outbox row inside the caller's transaction `tx` (WH-07). Throws
 * WEBHOOK_EVENT_INVALID, WEBHOOK_EVENT_TOO_LARGE, WEBHOOK_TENANT_NOT_FOUND or
 * WEBHOOK_IDEMPOTENCY_CONFLICT; none of them leaves the caller's transaction aborted.
 */
export async function enqueue(
  tx: Queryable,
  tenantId: string,
  event: NewEvent,
  ctx: EnqueueContext,
): Promise<EnqueuedEvent> {
  const type = checkEventType(event.type);
  const text = payloadText(event.payload, ctx.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES);
  const key = checkKey(event.idempotencyKey);
  const id = newId("msg", ctx.randomBytes);
  const now = new Date(ctx.nowMs);
  const params = [id, tenantId, type, text, Buffer.byteLength(text, "utf8"), now, key];
  const { rows } = await tx.query<{ id: string; created_at: Date }>(INSERT, params);
  if (rows[0]) return { eventId: rows[0].id, created: true, createdAt: rows[0].created_at };
  if (key === null) throw storeErrors.create("WEBHOOK_TENANT_NOT_FOUND", { fields: { tenantId } });
  const existing = await tx.query<{ id: string; type: string; created_at: Date; same_payload: boolean }>(
    EXISTING,
    [tenantId, key, text],
  );
  const found = existing.rows[0];
  if (!found) throw storeErrors.create("WEBHOOK_TENANT_NOT_FOUND", { fields: { tenantId } });
  if (found.type !== type || !found.same_payload) {
    throw storeErrors.create("WEBHOOK_IDEMPOTENCY_CONFLICT", {
      fields: { idempotencyKey: key, eventId: found.id },
    });
  }
  return { eventId: found.id, created: false, createdAt: found.created_at };
}

/**
 * `enqueue` in a transaction of its own: the ingest path of producers that call the API.
 *
 * @example
 * const { eventId } = await ingestEvent(db, tenantId, { type: "invoice.paid", payload, idempotencyKey }, ctx);
 */
export async function ingestEvent(
  db: Database,
  tenantId: string,
  event: NewEvent,
  ctx: EnqueueContext,
): Promise<EnqueuedEvent> {
  try {
    return await db.transaction((tx) => enqueue(tx, tenantId, event, ctx));
  } catch (error) {
    if (sqlErrors.is(error, "SQL_UNAVAILABLE") && error.fields.commitOutcome === "unknown") {
      throw eventInDoubt(error);
    }
    throw error;
  }
}

/**
 * The link broke while COMMIT was on its way (the SQL layer says `commitOutcome: "unknown"`):
 * still 503 SQL_UNAVAILABLE, but in this API's words, so the caller retries with its
 * Idempotency-Key (which returns the event if it was stored) instead of reading the 503 as
 * "not stored". A failure before COMMIT is a plain 503: the server rolls the open transaction
 * back when the session ends.
 */
function eventInDoubt(cause: CasebookError): Error {
  return sqlErrors.create("SQL_UNAVAILABLE", {
    detail:
      "The database link broke while committing: the event may or may not be stored. Retry with the same Idempotency-Key.",
    fields: { eventOutcome: "unknown" },
    cause,
  });
}

interface EventRow {
  id: string;
  tenant_id: string;
  type: string;
  payload: Record<string, unknown> | null;
  payload_bytes: number;
  payload_expires_at: Date;
  idempotency_key: string | null;
  created_at: Date;
}

/** The tenant's event `id` with its payload (null after retention), or undefined (absent or another tenant's). */
export async function getEvent(q: Queryable, tenantId: string, id: string): Promise<StoredEvent | undefined> {
  if (!isId("msg", id)) return undefined;
  const { rows } = await q.query<EventRow>(
    `SELECT id, tenant_id, type, payload, payload_bytes, payload_expires_at, idempotency_key, created_at
       FROM events WHERE id = $1 AND tenant_id = $2`,
    [id, tenantId],
  );
  const r = rows[0];
  if (!r) return undefined;
  return {
    id: r.id,
    tenantId: r.tenant_id,
    type: r.type,
    payload: r.payload,
    payloadBytes: r.payload_bytes,
    payloadExpiresAt: r.payload_expires_at,
    idempotencyKey: r.idempotency_key,
    createdAt: r.created_at,
  };
}

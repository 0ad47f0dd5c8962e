/**
 * The transactional outbox (PY-11). A post-payment event (webhook, e-mail,
 * reconciliation) is written by `enqueue` in the SAME transaction as the change that
 * caused it, so it exists iff that change committed — no dual write, no lost or phantom
 * event. The relay (`workers/outbox-relay.ts`) publishes it afterwards with the claim
 * functions below: in order per ordering key (the account, SQS FIFO's MessageGroupId)
 * and in parallel across keys, at least once, under a stable `eventId` consumers dedupe on.
 *
 * Ordering: each key has a counter row in `outbox_streams`; `enqueue` bumps it with an
 * upsert whose row lock is held until the caller commits, so two transactions enqueuing
 * for one key run one after the other and per-key `seq` order equals commit order
 * (a global bigserial would not: ids are handed out before commit).
 *
 * @example
 * await db.transaction(async (tx) => {
 *   await applyTransfers(tx, ...);
 *   await enqueue(tx, { orderingKey: `merchant:${merchantId}`, type: "payment.captured", payload: { paymentId, amountMinor } });
 * });
 */
import { randomUUID } from "node:crypto";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { isUniqueViolation } from "@casebook/infra/sql/sql-state";
import { outboxErrors } from "../domain/outbox-errors.ts";

/** Largest payload `enqueue` accepts, in bytes of its JSON text, unless told otherwise. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;
/** Bound on the text kept from a publisher's error message. */
export const LAST_ERROR_MAX_CHARS = 1_000;

const TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;
const TYPE_MAX_CHARS = 100;
const KEY_MAX_CHARS = 255;

export interface NewOutboxEvent {
  /** What orders events: events of one key are published in commit order (the account id). */
  orderingKey: string;
  /** Dotted lowercase name, `payment.captured`. */
  type: string;
  /** A JSON object; bigints are written as decimal strings (money stays exact). */
  payload: Record<string, unknown>;
  /** Stable id consumers dedupe on; default a random UUID. Give one when the event has a natural id. */
  eventId?: string;
}

export interface EnqueueOptions {
  /** created_at, epoch ms; default Date.now(). */
  nowMs?: number;
  /** Bound on the payload's JSON text, in bytes; default DEFAULT_MAX_PAYLOAD_BYTES. */
  maxPayloadBytes?: number;
}

/** An event as the relay hands it to a publisher. */
export interface OutboxEvent {
  readonly eventId: string;
  readonly orderingKey: string;
  /** Position within its key, 1, 2, 3…: commit order. */
  readonly seq: bigint;
  readonly type: string;
  readonly payload: Record<string, unknown>;
  readonly createdAtMs: number;
}

function invalid(field: string, detail: string): Error {
  return outboxErrors.create("PAYMENTS_OUTBOX_EVENT_INVALID", { fields: { field }, detail });
}

function checkText(field: string, value: unknown, maxChars: number): string {
  if (typeof value !== "string" || value.length < 1 || value.length > maxChars) {
    throw invalid(field, `${field} must be a string of 1 to ${maxChars} characters.`);
  }
  return value;
}

/** The payload as JSON text, bigints as strings, within the size bound. */
function payloadText(payload: unknown, maxBytes: number): string {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload)) {
    throw invalid("payload", "payload must be a JSON object.");
  }
  const text = JSON.stringify(payload, (_key, value) =>
    typeof value === "bigint" ? value.toString() : value,
  );
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) {
    throw outboxErrors.create("PAYMENTS_OUTBOX_PAYLOAD_TOO_LARGE", { fields: { bytes, maxBytes } });
  }
  return text;
}

const ENQUEUE = `
  WITH stream AS (
    INSERT INTO outbox_streams AS s (ordering_key, last_seq, next_attempt_at)
    VALUES ($1, 1, $5)
    ON CONFLICT (ordering_key) DO UPDATE SET last_seq = s.last_seq + 1
    RETURNING last_seq
  )
  INSERT INTO outbox_events (ordering_key, seq, event_id, type, payload, created_at)
  SELECT $1, stream.last_seq, $2, $3, $4::jsonb, $5 FROM stream
  RETURNING seq`;

/**
 * Writes `event` into the outbox inside the caller's transaction `tx`: it is published
 * iff the transaction commits. Returns the event id and its position in its key.
 * Throws PAYMENTS_OUTBOX_EVENT_INVALID, PAYMENTS_OUTBOX_PAYLOAD_TOO_LARGE, or
 * PAYMENTS_OUTBOX_EVENT_DUPLICATE (an `eventId` used before; on PostgreSQL the
 * transaction is then aborted).
 *
 * @example
 * const { eventId } = await enqueue(tx, { orderingKey: "acct:42", type: "payment.authorized", payload: { paymentId: "7" } });
 */
export async function enqueue(
  tx: Queryable,
  event: NewOutboxEvent,
  options: EnqueueOptions = {},
): Promise<{ eventId: string; seq: bigint }> {
  const orderingKey = checkText("orderingKey", event.orderingKey, KEY_MAX_CHARS);
  const type = checkText("type", event.type, TYPE_MAX_CHARS);
  if (!TYPE_PATTERN.test(type))
    throw invalid("type", "type must be dotted lowercase words, like payment.captured.");
  const eventId = checkText("eventId", event.eventId ?? randomUUID(), KEY_MAX_CHARS);
  const text = payloadText(event.payload, options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES);
  const createdAt = new Date(options.nowMs ?? Date.now());
  try {
    const { rows } = await tx.query<{ seq: bigint }>(ENQUEUE, [orderingKey, eventId, type, text, createdAt]);
    return { eventId, seq: rows[0]!.seq };
  } catch (err) {
    if (isUniqueViolation(err)) {
      throw outboxErrors.create("PAYMENTS_OUTBOX_EVENT_DUPLICATE", { fields: { eventId }, cause: err });
    }
    throw err;
  }
}

/** A relay's claim on one key: publish its events from `publishedSeq + 1`, fenced by `token`. */
export interface StreamClaim {
  readonly orderingKey: string;
  readonly publishedSeq: bigint;
  readonly token: bigint;
  /** Consecutive failures of the head event so far. */
  readonly attempts: number;
}

const CLAIM = `
  WITH due AS (
    SELECT ordering_key FROM outbox_streams
    WHERE published_seq < last_seq AND parked_at IS NULL AND next_attempt_at <= $1
      AND (lease_until IS NULL OR lease_until <= $1
           OR ($5::jsonb IS NOT NULL AND lease_owner = $3
               AND ordering_key NOT IN (SELECT jsonb_array_elements_text($5::jsonb))))
    ORDER BY next_attempt_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED
  )
  UPDATE outbox_streams s
  SET lease_owner = $3, lease_until = $4, lease_token = s.lease_token + 1
  FROM due WHERE s.ordering_key = due.ordering_key
  RETURNING s.ordering_key, s.published_seq, s.lease_token, s.attempts`;

/**
 * Claims up to `maxKeys` keys that have unpublished, due events and no live claim, for
 * `leaseMs`. SKIP LOCKED passes over keys another relay is claiming or a transaction is
 * enqueuing to, so relays never wait on each other; the lease keeps one relay per key.
 *
 * `reclaimOwnExcept`: keys `owner` is publishing right now. Every OTHER key leased to `owner`
 * is claimed again at once (a new token fences the old claim): its owner knows nobody works on
 * it — a round the database failed mid-way left it leased — so it need not wait out its lease.
 * Leave it undefined to honour every live lease, this owner's included.
 */
export async function claimStreams(
  db: Queryable,
  input: {
    owner: string;
    maxKeys: number;
    leaseMs: number;
    nowMs: number;
    reclaimOwnExcept?: readonly string[];
  },
): Promise<StreamClaim[]> {
  const { rows } = await db.query<{
    ordering_key: string;
    published_seq: bigint;
    lease_token: bigint;
    attempts: number;
  }>(CLAIM, [
    new Date(input.nowMs),
    input.maxKeys,
    input.owner,
    new Date(input.nowMs + input.leaseMs),
    input.reclaimOwnExcept === undefined ? null : JSON.stringify(input.reclaimOwnExcept),
  ]);
  return rows.map((r) => ({
    orderingKey: r.ordering_key,
    publishedSeq: r.published_seq,
    token: r.lease_token,
    attempts: r.attempts,
  }));
}

/** The next `maxBatch` unpublished events of a claimed key, in seq order. */
export async function loadBatch(db: Queryable, claim: StreamClaim, maxBatch: number): Promise<OutboxEvent[]> {
  const { rows } = await db.query<{
    event_id: string;
    seq: bigint;
    type: string;
    payload: Record<string, unknown>;
    created_at: Date;
  }>(
    `SELECT event_id, seq, type, payload, created_at FROM outbox_events
     WHERE ordering_key = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    [claim.orderingKey, claim.publishedSeq, maxBatch],
  );
  return rows.map((r) => ({
    eventId: r.event_id,
    orderingKey: claim.orderingKey,
    seq: r.seq,
    type: r.type,
    payload: r.payload,
    createdAtMs: r.created_at.getTime(),
  }));
}

/**
 * Records that `event` was published and extends the claim by `leaseMs`. False when the
 * claim was lost (another relay took the key over): the caller must stop publishing it.
 * The `published_seq = seq − 1` guard asserts in SQL that nothing is skipped.
 */
export async function markPublished(
  db: Database,
  claim: StreamClaim,
  event: OutboxEvent,
  input: { leaseMs: number; nowMs: number },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const updated = await tx.query(
      `UPDATE outbox_streams
       SET published_seq = $3, attempts = 0, last_error = NULL, lease_until = $4
       WHERE ordering_key = $1 AND lease_token = $2 AND published_seq = $3 - 1`,
      [claim.orderingKey, claim.token, event.seq, new Date(input.nowMs + input.leaseMs)],
    );
    if (updated.rowCount !== 1) return false;
    await tx.query("UPDATE outbox_events SET published_at = $3 WHERE ordering_key = $1 AND seq = $2", [
      claim.orderingKey,
      event.seq,
      new Date(input.nowMs),
    ]);
    return true;
  });
}

/**
 * Gives the claim back after a failure of the head event: counts the attempt and sets
 * when the key is due again (`retryAtMs`), or parks the key (`retryAtMs` undefined)
 * when the retry budget is spent. False when the claim was already lost.
 */
export async function recordFailure(
  db: Queryable,
  claim: StreamClaim,
  input: { error: string; nowMs: number; retryAtMs: number | undefined },
): Promise<boolean> {
  const parked = input.retryAtMs === undefined;
  const { rowCount } = await db.query(
    `UPDATE outbox_streams
     SET attempts = attempts + 1, last_error = $3, next_attempt_at = $4, parked_at = $5,
         lease_owner = NULL, lease_until = NULL
     WHERE ordering_key = $1 AND lease_token = $2`,
    [
      claim.orderingKey,
      claim.token,
      input.error.slice(0, LAST_ERROR_MAX_CHARS),
      new Date(input.retryAtMs ?? input.nowMs),
      parked ? new Date(input.nowMs) : null,
    ],
  );
  return rowCount === 1;
}

/** Gives the claim back so any relay may take the key's next events at once. */
export async function releaseStream(db: Queryable, claim: StreamClaim): Promise<void> {
  await db.query(
    "UPDATE outbox_streams SET lease_owner = NULL, lease_until = NULL WHERE ordering_key = $1 AND lease_token = $2",
    [claim.orderingKey, claim.token],
  );
}

/** Un-parks a key (an operator fixed the consumer): its head event is retried at once. */
export async function resumeStream(db: Queryable, orderingKey: string, nowMs: number): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE outbox_streams SET parked_at = NULL, attempts = 0, next_attempt_at = $2
     WHERE ordering_key = $1 AND parked_at IS NOT NULL`,
    [orderingKey, new Date(nowMs)],
  );
  return rowCount === 1;
}

/** What a key's stream looks like, for operators and tests. */
export interface StreamState {
  orderingKey: string;
  lastSeq: bigint;
  publishedSeq: bigint;
  attempts: number;
  nextAttemptAtMs: number;
  lastError: string | null;
  parked: boolean;
}

/** The state of one key's stream, or undefined when it never had an event. */
export async function streamState(db: Queryable, orderingKey: string): Promise<StreamState | undefined> {
  const { rows } = await db.query<{
    last_seq: bigint;
    published_seq: bigint;
    attempts: number;
    next_attempt_at: Date;
    last_error: string | null;
    parked_at: Date | null;
  }>(
    "SELECT last_seq, published_seq, attempts, next_attempt_at, last_error, parked_at FROM outbox_streams WHERE ordering_key = $1",
    [orderingKey],
  );
  const r = rows[0];
  if (r === undefined) return undefined;
  return {
    orderingKey,
    lastSeq: r.last_seq,
    publishedSeq: r.published_seq,
    attempts: r.attempts,
    nextAttemptAtMs: r.next_attempt_at.getTime(),
    lastError: r.last_error,
    parked: r.parked_at !== null,
  };
}

/**
 * The transactional outbox, store side: an event is written in the SAME transaction as the
 * change that caused it (`enqueue`), so it exists iff that change committed — no dual write,
 * no lost or phantom event — and a relay (`outbox-relay.ts`) publishes it afterwards, at least
 * once, under a stable event id consumers dedupe on. Two disciplines, one lease vocabulary
 * (`lease_owner`, `lease_expires_at`, `lease_version`, `next_attempt_at`, on `lease-queue.ts`):
 *
 * - **`OrderedOutbox`** — in order per ordering key (SQS FIFO's MessageGroupId), in parallel
 *   across keys. Each key has a stream row (`outbox_streams`) whose counter `enqueue` bumps
 *   with an upsert: its row lock is held until the caller commits, so per-key `seq` order IS
 *   commit order (a global sequence would not be: ids are handed out before commit). The
 *   leased item is the stream row: one relay per key, one event of a key in flight. A head
 *   event that keeps failing parks its key (order forbids skipping it) until `resume`.
 * - **`UnorderedOutbox`** — one row per event (`outbox`), claimed in batches; each row is
 *   leased on its own and retried on its own. `next_attempt_at` is the lease end while
 *   claimed, so "due" is one index range. The caller's extra columns (a tenant id) ride along.
 *
 * The failure cap policy is one for both: `attempts` counts consecutive failures of the item
 * (the key's head event, or the row), the relay waits min(retryCapMs, retryBaseMs · 2^(n−1))
 * (jittered) before the next, and parks the item (`parked_at`) after `maxAttempts` — or never,
 * when the system says Infinity. Tables stay in each system's schema: names are options, the
 * systems' own `.sql` migrations create them (`outbox-ddl.ts` shows the columns).
 *
 * @example
 * const outbox = new OrderedOutbox(); // outbox_streams + outbox_events
 * await db.transaction(async (tx) => {
 *   await applyTransfers(tx, ...);
 *   await outbox.enqueue(tx, { orderingKey: `merchant:${id}`, type: "payment.captured", payload: { amountMinor } });
 * });
 */
import { randomUUID } from "node:crypto";
import { assert } from "@casebook/kit/assert";
import { type Lease, type LeaseId, LeaseQueue } from "./lease-queue.ts";
import { type OutboxErrorCode, outboxErrors } from "./outbox-errors.ts";
import type { Database, Queryable } from "./sql.ts";
import { checkIdentifier, quoteIdentifier } from "./sql-schema.ts";
import { isUniqueViolation } from "./sql-state.ts";

/** Largest payload `enqueue` accepts, in bytes of its JSON text, unless told otherwise. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024;
/** Bound on the text kept from a publisher's error message. */
export const LAST_ERROR_MAX_CHARS = 1_000;
/** Largest claim of either discipline (keys, or rows): a lease covers the whole claim's work. */
export const MAX_OUTBOX_CLAIM = 1_000;
/** Longest an unordered row may be held back from relays at enqueue (`dueInMs`): one hour. */
export const MAX_DUE_IN_MS = 3_600_000;
/** Largest batch of events of one key loaded per claim, and of events `enqueueMany` writes at once. */
export const MAX_OUTBOX_BATCH = 1_000;

const TYPE_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/;
const TYPE_MAX_CHARS = 100;
const KEY_MAX_CHARS = 255;

/** What every outbox event carries to a publisher, whatever the discipline: its stable id. */
export interface OutboxEventBase {
  readonly eventId: string;
}

/**
 * A relay's claim on one item (a key's stream, or a row): the lease its writes are fenced
 * by, the item's consecutive failures so far, and what the relay names it by in errors.
 */
export interface OutboxClaim<E extends OutboxEventBase = OutboxEventBase> {
  /** The ordering key (ordered) or the event id (unordered). */
  readonly label: string;
  /** Replaced by a mark that extends it (ordered). */
  lease: Lease;
  /** Consecutive failed publishes of the item's head before this claim. */
  readonly attempts: number;
  /** Highest seq marked published: before this claim, then as of its last mark (ordered; 0n for a row). */
  publishedSeq: bigint;
  /** The row's event (unordered; a key's events are loaded by `load`). */
  readonly event: E | undefined;
}

export interface OutboxClaimRequest {
  owner: string;
  nowMs: number;
  leaseMs: number;
  /** Keys (ordered) or rows (unordered), 1..MAX_OUTBOX_CLAIM. */
  limit: number;
  /** Floor on leaseMs for this call: the relay's publish timeout + 1. */
  minLeaseMs?: number;
}

export interface OutboxFailure {
  error: string;
  nowMs: number;
  /** When the item is due again; undefined parks it (the retry budget is spent). */
  retryAtMs: number | undefined;
}

/** The store side a relay drives; both disciplines implement it. */
export interface OutboxStore<E extends OutboxEventBase = OutboxEventBase> {
  readonly discipline: "ordered" | "unordered";
  /** Claims up to `limit` due, unparked, unleased items. */
  claim(q: Queryable, request: OutboxClaimRequest): Promise<OutboxClaim<E>[]>;
  /** The claim's next events to publish, in order (unordered: its one event). */
  load(q: Queryable, claim: OutboxClaim<E>, maxBatch: number): Promise<E[]>;
  /**
   * Records `event` published. Ordered: with every event of the claim before it since the last
   * mark, and the lease is extended by `leaseMs` (the key's next events follow); unordered: the
   * claim ends. False when the claim was lost.
   */
  markPublished(
    db: Database,
    claim: OutboxClaim<E>,
    event: E,
    at: { nowMs: number; leaseMs: number },
  ): Promise<boolean>;
  /** Counts a failed publish, gives the claim back due at `retryAtMs` or parked. False when lost. */
  recordFailure(q: Queryable, claim: OutboxClaim<E>, failure: OutboxFailure): Promise<boolean>;
  /** Gives the claim back unworked, due now; false when lost. */
  release(q: Queryable, claim: OutboxClaim<E>, nowMs: number): Promise<boolean>;
  /** Gives back every item leased to `owner` except `keep` (a failure stranded them); how many. */
  releaseOrphaned(
    q: Queryable,
    options: { owner: string; keep: readonly LeaseId[]; nowMs: number },
  ): Promise<number>;
}

function invalid(field: string, detail: string): Error {
  return outboxErrors.create("OUTBOX_EVENT_INVALID", { fields: { field }, detail });
}

function checkText(field: string, value: unknown, maxChars: number): string {
  if (typeof value !== "string" || value.length < 1 || value.length > maxChars)
    throw invalid(field, `${field} must be a string of 1 to ${maxChars} characters.`);
  return value;
}

function checkLimit(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 1 || value > max)
    throw new RangeError(`${name} must be an integer in 1..${max}, got ${value}`);
}

/** The payload as JSON text, bigints as decimal strings (money stays exact), within the size bound. */
function payloadText(payload: unknown, maxBytes: number): string {
  if (payload === null || typeof payload !== "object" || Array.isArray(payload))
    throw invalid("payload", "payload must be a JSON object.");
  const text = JSON.stringify(payload, (_key, value) =>
    typeof value === "bigint" ? value.toString() : value,
  );
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes)
    throw outboxErrors.create("OUTBOX_PAYLOAD_TOO_LARGE", { fields: { bytes, maxBytes } });
  return text;
}

function duplicateOr(err: unknown, eventId: string): unknown {
  return isUniqueViolation(err)
    ? outboxErrors.create("OUTBOX_EVENT_DUPLICATE", { fields: { eventId }, cause: err })
    : err;
}

/**
 * The event id a unique violation names (`Key (event_id)=(x) already exists.`), when it is one
 * of `eventIds`: which event of a batch was written before. Undefined when the engine's detail
 * does not say (the caller then names the batch's ids, bounded).
 */
function duplicateIdIn(err: unknown, eventIds: readonly string[]): string | undefined {
  const detail = (err as { detail?: unknown } | null)?.detail;
  if (typeof detail !== "string") return undefined;
  return eventIds.find((id) => detail === `Key (event_id)=(${id}) already exists.`);
}

/**
 * What both disciplines write the same way through their lease queue: a failure (counted,
 * due again or parked, the claim ended), a give-back, the give-back of stranded claims.
 */
abstract class LeasedOutbox<E extends OutboxEventBase> {
  // biome-ignore lint/suspicious/noExplicitAny: each subclass keeps its own row and id types
  protected readonly queue: LeaseQueue<any, any>;

  // biome-ignore lint/suspicious/noExplicitAny: see above
  constructor(queue: LeaseQueue<any, any>) {
    this.queue = queue;
  }

  async recordFailure(q: Queryable, claim: OutboxClaim<E>, failure: OutboxFailure): Promise<boolean> {
    const write = await this.queue.update(q, claim.lease, {
      nowMs: failure.nowMs,
      set: (p) => failureSet(p, failure),
    });
    return write.won;
  }

  release(q: Queryable, claim: OutboxClaim<E>, nowMs: number): Promise<boolean> {
    return this.queue.release(q, claim.lease, nowMs);
  }

  releaseOrphaned(
    q: Queryable,
    options: { owner: string; keep: readonly LeaseId[]; nowMs: number },
  ): Promise<number> {
    return this.queue.releaseOrphaned(q, options);
  }
}

/** SET clauses of a failed publish: one more attempt, the error, when due again or parked. */
function failureSet(p: { now: string; add(v: unknown): string }, failure: OutboxFailure): string {
  const parked = failure.retryAtMs === undefined;
  const error = p.add(failure.error.slice(0, LAST_ERROR_MAX_CHARS));
  const due = parked ? p.now : p.add(new Date(failure.retryAtMs!));
  return `attempts = t.attempts + 1, last_error = ${error}, next_attempt_at = ${due}, parked_at = ${parked ? p.now : "NULL"}`;
}

// ---------------------------------------------------------------------------------------------
// Ordered per key

export interface NewOrderedEvent {
  /** What orders events: events of one key are published in commit order (the account id). */
  orderingKey: string;
  /** Dotted lowercase name, `payment.captured`. */
  type: string;
  /** A JSON object; bigints are written as decimal strings. */
  payload: Record<string, unknown>;
  /** Stable id consumers dedupe on; default a random UUID. Give one when the event has a natural id. */
  eventId?: string;
}

export interface EnqueueOptions {
  /** created_at, epoch ms; default Date.now(). */
  nowMs?: number;
  /** Bound on the payload's JSON text, in bytes; default the outbox's maxPayloadBytes. */
  maxPayloadBytes?: number;
}

/** An ordered event as `enqueue` writes it: checked, its id chosen, its payload as JSON text. */
interface CheckedOrderedEvent {
  orderingKey: string;
  eventId: string;
  type: string;
  payloadJson: string;
}

/** The one validation of `enqueue` and `enqueueMany`: OUTBOX_EVENT_INVALID or OUTBOX_PAYLOAD_TOO_LARGE. */
function checkOrderedEvent(event: NewOrderedEvent, maxPayloadBytes: number): CheckedOrderedEvent {
  const orderingKey = checkText("orderingKey", event.orderingKey, KEY_MAX_CHARS);
  const type = checkText("type", event.type, TYPE_MAX_CHARS);
  if (!TYPE_PATTERN.test(type))
    throw invalid("type", "type must be dotted lowercase words, like payment.captured.");
  const eventId = checkText("eventId", event.eventId ?? randomUUID(), KEY_MAX_CHARS);
  const payloadJson = payloadText(event.payload, maxPayloadBytes);
  return { orderingKey, eventId, type, payloadJson };
}

/**
 * `checkOrderedEvent` of each event, its error given the event's `index`; an event id given
 * twice is OUTBOX_EVENT_DUPLICATE (the statement would fail on it anyway, after its work).
 */
function checkOrderedEvents(
  events: readonly NewOrderedEvent[],
  maxPayloadBytes: number,
): CheckedOrderedEvent[] {
  const seen = new Set<string>();
  return events.map((event, index) => {
    let checked: CheckedOrderedEvent;
    try {
      checked = checkOrderedEvent(event, maxPayloadBytes);
    } catch (err) {
      throw outboxErrors.is(err)
        ? outboxErrors.create(err.code as OutboxErrorCode, {
            fields: { ...err.fields, index },
            detail: err.message,
          })
        : err;
    }
    if (seen.has(checked.eventId))
      throw outboxErrors.create("OUTBOX_EVENT_DUPLICATE", {
        fields: { eventId: checked.eventId, index },
        detail: `eventId ${checked.eventId} is given twice in one enqueueMany.`,
      });
    seen.add(checked.eventId);
    return checked;
  });
}

/** An event of an ordered outbox as the relay hands it to a publisher. */
export interface OrderedOutboxEvent extends OutboxEventBase {
  readonly createdAtMs: number;
  readonly orderingKey: string;
  /** Position within its key, 1, 2, 3…: commit order. */
  readonly seq: bigint;
  readonly type: string;
  readonly payload: Record<string, unknown>;
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

export interface OrderedOutboxOptions {
  /** The per-key stream table; default `outbox_streams`. */
  streams?: string;
  /** The events table; default `outbox_events`. */
  events?: string;
  /** Default bound of enqueue's payload, in bytes; default DEFAULT_MAX_PAYLOAD_BYTES. */
  maxPayloadBytes?: number;
}

/** The ordered outbox over a system's two tables; see the file comment. Stateless. */
export class OrderedOutbox
  extends LeasedOutbox<OrderedOutboxEvent>
  implements OutboxStore<OrderedOutboxEvent>
{
  readonly discipline = "ordered";
  readonly #s: string;
  readonly #e: string;
  readonly #maxPayloadBytes: number;
  readonly #enqueue: string;
  readonly #markPublished: string;

  constructor(options: OrderedOutboxOptions = {}) {
    const streams = checkIdentifier(options.streams ?? "outbox_streams");
    super(
      new LeaseQueue<{ ordering_key: string; published_seq: bigint; attempts: number }, string>({
        table: streams,
        idColumn: "ordering_key",
        idType: "text",
        claimable: "t.published_seq < t.last_seq AND t.parked_at IS NULL",
        order: "t.next_attempt_at",
        returning: "t.ordering_key, t.published_seq, t.attempts",
        minLeaseMs: 1,
        maxClaimLimit: MAX_OUTBOX_CLAIM,
      }),
    );
    this.#s = quoteIdentifier(streams);
    this.#e = quoteIdentifier(checkIdentifier(options.events ?? "outbox_events"));
    this.#maxPayloadBytes = options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES;
    checkLimit("maxPayloadBytes", this.#maxPayloadBytes, 16 * 1024 * 1024);
    this.#enqueue = `
      WITH stream AS (
        INSERT INTO ${this.#s} AS s (ordering_key, last_seq, next_attempt_at)
        VALUES ($1, 1, $5)
        ON CONFLICT (ordering_key) DO UPDATE SET last_seq = s.last_seq + 1
        RETURNING last_seq
      )
      INSERT INTO ${this.#e} (ordering_key, seq, event_id, type, payload, created_at)
      SELECT $1, stream.last_seq, $2, $3, $4::jsonb, $5 FROM stream
      RETURNING seq`;
    const fence = this.queue.fenceSql({ id: "$1", version: "$2", owner: "$3" });
    this.#markPublished = `
      WITH stream AS (
        UPDATE ${this.#s} t SET published_seq = $4, attempts = 0, last_error = NULL, lease_expires_at = $5
         WHERE ${fence} AND t.published_seq = $7 AND $4 > $7
        RETURNING t.ordering_key
      ), event AS (
        UPDATE ${this.#e} e SET published_at = $6
          FROM stream WHERE e.ordering_key = stream.ordering_key AND e.seq > $7 AND e.seq <= $4
      )
      SELECT count(*)::int AS marked FROM stream`;
  }

  /**
   * Writes `event` inside the caller's transaction `tx`: it is published iff `tx` commits.
   * Returns the event id and its position in its key. Throws OUTBOX_EVENT_INVALID,
   * OUTBOX_PAYLOAD_TOO_LARGE, or OUTBOX_EVENT_DUPLICATE (an `eventId` used before; on
   * PostgreSQL the transaction is then aborted).
   *
   * @example
   * const { eventId, seq } = await outbox.enqueue(tx, { orderingKey: "acct:42", type: "payment.authorized", payload: { paymentId: "7" } });
   */
  async enqueue(
    tx: Queryable,
    event: NewOrderedEvent,
    options: EnqueueOptions = {},
  ): Promise<{ eventId: string; seq: bigint }> {
    const checked = checkOrderedEvent(event, options.maxPayloadBytes ?? this.#maxPayloadBytes);
    const { eventId } = checked;
    const createdAt = new Date(options.nowMs ?? Date.now());
    try {
      const { rows } = await tx.query<{ seq: bigint }>(this.#enqueue, [
        checked.orderingKey,
        eventId,
        checked.type,
        checked.payloadJson,
        createdAt,
      ]);
      return { eventId, seq: rows[0]!.seq };
    } catch (err) {
      throw duplicateOr(err, eventId);
    }
  }

  /**
   * `enqueue` of many events in ONE statement, inside the caller's transaction `tx`: each is
   * published iff `tx` commits. Events of one key take consecutive positions in input order
   * (after whatever the key had); each stream row is upserted once. Returns each event's id and
   * position, in input order. Same checks and errors as `enqueue` (OUTBOX_EVENT_INVALID naming
   * the field, OUTBOX_PAYLOAD_TOO_LARGE, OUTBOX_EVENT_DUPLICATE); at most MAX_OUTBOX_BATCH events.
   *
   * Every event is checked before the statement is sent, so a bad one writes nothing of the
   * batch; its error carries its `index` in `events`. An event id given twice in `events` is
   * OUTBOX_EVENT_DUPLICATE before any query; one written before is OUTBOX_EVENT_DUPLICATE from
   * the statement (on PostgreSQL the transaction is then aborted). More than MAX_OUTBOX_BATCH
   * events is a RangeError: split the group commit. The stream rows are locked in ordering-key
   * order, so concurrent batches over overlapping keys wait for each other, never deadlock.
   *
   * @example
   * const written = await outbox.enqueueMany(tx, [
   *   { orderingKey: "acct:42", type: "payment.captured", payload: { paymentId: "7" } },
   *   { orderingKey: "acct:42", type: "payment.captured", payload: { paymentId: "8" } },
   *   { orderingKey: "acct:9", type: "payment.captured", payload: { paymentId: "9" } },
   * ]); // [{ eventId, seq: n + 1n }, { eventId, seq: n + 2n }, { eventId, seq: m + 1n }]
   */
  async enqueueMany(
    tx: Queryable,
    events: readonly NewOrderedEvent[],
    options: EnqueueOptions = {},
  ): Promise<{ eventId: string; seq: bigint }[]> {
    if (events.length === 0) return [];
    const statement = this.enqueueManyStatement(events, { ...options, offset: 0, prefix: "" });
    let rows: { event_id: string; seq: bigint }[];
    try {
      ({ rows } = await tx.query<{ event_id: string; seq: bigint }>(
        `WITH ${statement.ctes} SELECT event_id, seq FROM ${statement.events}`,
        statement.params,
      ));
    } catch (err) {
      const named =
        duplicateIdIn(err, statement.eventIds) ?? statement.eventIds.join(",").slice(0, LAST_ERROR_MAX_CHARS);
      throw duplicateOr(err, named);
    }
    const seqById = new Map(rows.map((r) => [r.event_id, r.seq]));
    assert(seqById.size === statement.eventIds.length, "enqueueMany writes one row per event", {
      events: statement.eventIds.length,
      written: seqById.size,
    });
    return statement.eventIds.map((eventId) => {
      const seq = seqById.get(eventId);
      assert(seq !== undefined && seq >= 1n, "every event of the batch has a position", { eventId });
      return { eventId, seq };
    });
  }

  /**
   * `enqueueMany` as CTEs to compose into a caller's larger statement (`WITH <ctes>, … SELECT …`),
   * for a caller that writes the events and its own rows in ONE autocommit statement. The CTEs'
   * names start with `prefix`; `events` names the last, one row (`event_id`, `seq`) per event
   * written — the caller reads it (a data-modifying CTE runs whether read or not). Parameters are
   * `$offset+1…`. Same checks as `enqueueMany`, thrown before any query; at least one event.
   *
   * Each key's stream row is bumped once, by its count n, so the key's events take
   * last_seq − n + 1 … last_seq, numbered in input order. ORDER BY ordering_key makes the upsert
   * lock the stream rows in one order in every batch: two group commits with overlapping keys
   * queue behind each other instead of deadlocking. The events' positions are numbered after the
   * join, so every stream row is upserted before the first event row is written.
   *
   * @example
   * const e = outbox.enqueueManyStatement(events, { offset: 2, prefix: "ev_" });
   * await db.query(`WITH mine AS (…), ${e.ctes} SELECT count(*) FROM ${e.events}`, [a, b, ...e.params]);
   */
  enqueueManyStatement(
    events: readonly NewOrderedEvent[],
    options: EnqueueOptions & { offset: number; prefix: string },
  ): { ctes: string; events: string; eventIds: string[]; params: unknown[] } {
    checkLimit("events.length", events.length, MAX_OUTBOX_BATCH);
    if (events.length === 0) throw new RangeError("enqueueManyStatement needs at least one event");
    if (!/^[a-z_]{0,20}$/.test(options.prefix)) throw new RangeError(`bad CTE prefix ${options.prefix}`);
    const checked = checkOrderedEvents(events, options.maxPayloadBytes ?? this.#maxPayloadBytes);
    const eventIds = checked.map((e) => e.eventId);
    const $ = (k: number) => `$${options.offset + k}`;
    const { prefix } = options;
    const [input, counts, stream, written] = [
      `${prefix}input`,
      `${prefix}counts`,
      `${prefix}stream`,
      `${prefix}events`,
    ];
    return {
      ctes: `${input} AS (
        SELECT * FROM unnest(${$(1)}::text[], ${$(2)}::text[], ${$(3)}::text[], ${$(4)}::text[])
          WITH ORDINALITY AS i(ordering_key, event_id, type, payload, ord)
      ), ${counts} AS (
        SELECT ordering_key, count(*) AS n FROM ${input} GROUP BY ordering_key
      ), ${stream} AS (
        INSERT INTO ${this.#s} AS s (ordering_key, last_seq, next_attempt_at)
        SELECT ordering_key, n, ${$(5)}::timestamptz FROM ${counts} ORDER BY ordering_key
        ON CONFLICT (ordering_key) DO UPDATE SET last_seq = s.last_seq + EXCLUDED.last_seq
        RETURNING ordering_key, last_seq
      ), ${written} AS (
        INSERT INTO ${this.#e} (ordering_key, seq, event_id, type, payload, created_at)
        SELECT i.ordering_key,
               ${stream}.last_seq - ${counts}.n + row_number() OVER (PARTITION BY i.ordering_key ORDER BY i.ord),
               i.event_id, i.type, i.payload::jsonb, ${$(5)}::timestamptz
          FROM ${input} i
          JOIN ${counts} ON ${counts}.ordering_key = i.ordering_key
          JOIN ${stream} ON ${stream}.ordering_key = i.ordering_key
        RETURNING event_id, seq
      )`,
      events: written,
      eventIds,
      params: [
        checked.map((e) => e.orderingKey),
        eventIds,
        checked.map((e) => e.type),
        checked.map((e) => e.payloadJson),
        new Date(options.nowMs ?? Date.now()),
      ],
    };
  }

  /** Claims up to `limit` keys with unpublished, due events and no live claim. */
  async claim(q: Queryable, request: OutboxClaimRequest): Promise<OutboxClaim<OrderedOutboxEvent>[]> {
    checkLimit("limit", request.limit, MAX_OUTBOX_CLAIM);
    const claimed = await this.queue.claim(q, request);
    return claimed.map(({ lease, row }) => ({
      label: row.ordering_key,
      lease,
      attempts: row.attempts,
      publishedSeq: row.published_seq,
      event: undefined,
    }));
  }

  /** The next `maxBatch` unpublished events of a claimed key, in seq order. */
  async load(
    q: Queryable,
    claim: OutboxClaim<OrderedOutboxEvent>,
    maxBatch: number,
  ): Promise<OrderedOutboxEvent[]> {
    checkLimit("maxBatch", maxBatch, MAX_OUTBOX_BATCH);
    const { rows } = await q.query<{
      event_id: string;
      seq: bigint;
      type: string;
      payload: Record<string, unknown>;
      created_at: Date;
    }>(
      `SELECT event_id, seq, type, payload, created_at FROM ${this.#e}
        WHERE ordering_key = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [claim.label, claim.publishedSeq, maxBatch],
    );
    return rows.map((r) => ({
      eventId: r.event_id,
      orderingKey: claim.label,
      seq: r.seq,
      type: r.type,
      payload: r.payload,
      createdAtMs: r.created_at.getTime(),
    }));
  }

  /**
   * Records `event` published — with the claim's events before it since its last mark (the relay
   * publishes them in seq order) — and extends the claim to `nowMs + leaseMs`, in ONE statement
   * (the stream row and the events' rows, atomically, without a BEGIN/COMMIT around them): the
   * stream row is the key's hot row, which every `enqueue` of the key also locks, so the relay
   * holds it for one round trip and its commit only. The guard `published_seq` = the claim's
   * last mark asserts in SQL that no one else marked the key meanwhile.
   */
  async markPublished(
    db: Database,
    claim: OutboxClaim<OrderedOutboxEvent>,
    event: OrderedOutboxEvent,
    at: { nowMs: number; leaseMs: number },
  ): Promise<boolean> {
    const untilMs = at.nowMs + at.leaseMs;
    const { rows } = await db.query<{ marked: number }>(this.#markPublished, [
      claim.label,
      claim.lease.leaseVersion,
      claim.lease.owner,
      event.seq,
      new Date(untilMs),
      new Date(at.nowMs),
      claim.publishedSeq,
    ]);
    if (rows[0]?.marked !== 1) return false;
    claim.lease = { ...claim.lease, leaseExpiresAtMs: untilMs };
    claim.publishedSeq = event.seq;
    return true;
  }

  /** Un-parks a key (an operator fixed the consumer): its head event is retried at once. */
  async resume(q: Queryable, orderingKey: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE ${this.#s} SET parked_at = NULL, attempts = 0, next_attempt_at = $2
        WHERE ordering_key = $1 AND parked_at IS NOT NULL`,
      [orderingKey, new Date(nowMs)],
    );
    return rowCount === 1;
  }

  /** The state of one key's stream, or undefined when it never had an event. */
  async state(q: Queryable, orderingKey: string): Promise<StreamState | undefined> {
    const { rows } = await q.query<{
      last_seq: bigint;
      published_seq: bigint;
      attempts: number;
      next_attempt_at: Date;
      last_error: string | null;
      parked_at: Date | null;
    }>(
      `SELECT last_seq, published_seq, attempts, next_attempt_at, last_error, parked_at
         FROM ${this.#s} WHERE ordering_key = $1`,
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
}

// ---------------------------------------------------------------------------------------------
// Unordered rows

/** A claimed row as an unordered outbox reads it, before `event` shapes it for the publisher. */
export interface UnorderedRow {
  id: bigint;
  eventId: string;
  createdAtMs: number;
  /** Publishes of this row, this one included: above 1 means a retry or a re-publish. */
  publishCount: number;
  /** The caller's extra columns (`columns`), by name. */
  columns: Record<string, unknown>;
}

export interface NewUnorderedEvent {
  /** Stable id consumers dedupe on (often the id of the caller's event row). */
  eventId: string;
  /** Values of the outbox's extra `columns`, by name. */
  columns?: Record<string, unknown>;
}

export interface UnorderedOutboxOptions<E extends OutboxEventBase> {
  /** The outbox table; default `outbox`. */
  table?: string;
  /** The caller's extra columns a claim returns (`tenant_id`): checked identifiers. */
  columns?: readonly string[];
  /** What the publisher gets for a row; default the row itself. */
  event?: (row: UnorderedRow) => E;
}

interface UnorderedDbRow {
  id: bigint;
  event_id: string;
  created_at: Date;
  publish_count: number;
  attempts: number;
  [column: string]: unknown;
}

/** The unordered outbox over a system's table; see the file comment. Stateless. */
export class UnorderedOutbox<E extends OutboxEventBase = UnorderedRow>
  extends LeasedOutbox<E>
  implements OutboxStore<E>
{
  readonly discipline = "unordered";
  readonly #t: string;
  readonly #columns: readonly string[];
  readonly #event: (row: UnorderedRow) => E;

  constructor(options: UnorderedOutboxOptions<E> = {}) {
    const table = checkIdentifier(options.table ?? "outbox");
    const columns = (options.columns ?? []).map(checkIdentifier);
    const extra = columns.map((c) => `, t.${quoteIdentifier(c)}`).join("");
    super(
      new LeaseQueue<UnorderedDbRow, bigint>({
        table,
        idType: "int8",
        claimable: "t.published_at IS NULL AND t.parked_at IS NULL",
        held: "t.published_at IS NULL",
        order: "t.next_attempt_at, t.id",
        returning: `t.id, t.event_id, t.created_at, t.publish_count, t.attempts${extra}`,
        onClaim: "publish_count = t.publish_count + 1",
        dueAtLeaseEnd: true,
        minLeaseMs: 1,
        maxClaimLimit: MAX_OUTBOX_CLAIM,
      }),
    );
    this.#t = quoteIdentifier(table);
    this.#columns = columns;
    this.#event = options.event ?? ((row) => row as unknown as E);
  }

  /**
   * Writes the outbox row of `event` inside the caller's transaction `tx`: it is published iff
   * `tx` commits. Throws OUTBOX_EVENT_INVALID, or OUTBOX_EVENT_DUPLICATE (the transaction is
   * then aborted on PostgreSQL). A caller that writes its own event row may insert both in one
   * statement instead, with these columns.
   *
   * `dueInMs` holds the row back from relays that long: the writer publishes it itself right
   * after its commit and marks it (`markPublishedByWriter`), and the relay is the backstop for
   * a writer that failed or died in between.
   *
   * @example
   * await outbox.enqueue(tx, { eventId: "msg_1", columns: { tenant_id: "t_1" } }, { nowMs });
   */
  async enqueue(
    tx: Queryable,
    event: NewUnorderedEvent,
    options: { nowMs?: number; dueInMs?: number } = {},
  ): Promise<{ id: bigint }> {
    const eventId = checkText("eventId", event.eventId, KEY_MAX_CHARS);
    const given = event.columns ?? {};
    for (const name of Object.keys(given))
      if (!this.#columns.includes(name)) throw invalid(name, `${name} is not a column of this outbox.`);
    const dueInMs = options.dueInMs ?? 0;
    if (!Number.isSafeInteger(dueInMs) || dueInMs < 0 || dueInMs > MAX_DUE_IN_MS)
      throw invalid("dueInMs", `dueInMs must be an integer in 0..${MAX_DUE_IN_MS}.`);
    const names = ["event_id", "created_at", "next_attempt_at", ...this.#columns];
    const nowMs = options.nowMs ?? Date.now();
    const values = [
      eventId,
      new Date(nowMs),
      new Date(nowMs + dueInMs),
      ...this.#columns.map((c) => given[c] ?? null),
    ];
    try {
      const { rows } = await tx.query<{ id: bigint }>(
        `INSERT INTO ${this.#t} (${names.map(quoteIdentifier).join(", ")})
         VALUES (${values.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING id`,
        values,
      );
      return { id: rows[0]!.id };
    } catch (err) {
      throw duplicateOr(err, eventId);
    }
  }

  /** Claims up to `limit` due rows, oldest due first, handed back in id order. */
  async claim(q: Queryable, request: OutboxClaimRequest): Promise<OutboxClaim<E>[]> {
    checkLimit("limit", request.limit, MAX_OUTBOX_CLAIM);
    const claimed = await this.queue.claim(q, request);
    return claimed
      .sort((a, b) => (a.row.id < b.row.id ? -1 : a.row.id > b.row.id ? 1 : 0))
      .map(({ lease, row }) => {
        const columns: Record<string, unknown> = {};
        for (const c of this.#columns) columns[c] = row[c];
        const event = this.#event({
          id: row.id,
          eventId: row.event_id,
          createdAtMs: row.created_at.getTime(),
          publishCount: row.publish_count,
          columns,
        });
        return { label: row.event_id, lease, attempts: row.attempts, publishedSeq: 0n, event };
      });
  }

  async load(_q: Queryable, claim: OutboxClaim<E>): Promise<E[]> {
    return claim.event === undefined ? [] : [claim.event];
  }

  /** Marks the row published and ends the claim. */
  async markPublished(
    db: Database,
    claim: OutboxClaim<E>,
    _event: E,
    at: { nowMs: number },
  ): Promise<boolean> {
    const write = await this.queue.update(db, claim.lease, {
      nowMs: at.nowMs,
      set: (p) => `published_at = ${p.now}, attempts = 0, last_error = NULL`,
    });
    return write.won;
  }

  /**
   * The writer published `eventId` itself (after enqueueing it with `dueInMs`): the row is done
   * unless a relay holds it now — then that relay publishes it again, same event id, and
   * consumers dedupe, as after any redelivery. False when the row was already published, or is
   * leased to a relay.
   */
  async markPublishedByWriter(q: Queryable, eventId: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE ${this.#t} SET published_at = $2
        WHERE event_id = $1 AND published_at IS NULL AND lease_owner IS NULL`,
      [eventId, new Date(nowMs)],
    );
    return rowCount === 1;
  }

  /**
   * Deletes up to `limit` rows published before `beforeMs`, oldest first; returns how many went.
   * Unpublished and parked rows stay. A system calls it from a loop of its own: an outbox that is
   * never pruned grows by a row per event.
   */
  async prunePublished(q: Queryable, beforeMs: number, limit: number): Promise<number> {
    checkLimit("limit", limit, MAX_OUTBOX_CLAIM);
    const { rowCount } = await q.query(
      `DELETE FROM ${this.#t} WHERE id IN (
         SELECT id FROM ${this.#t} WHERE published_at < $1 ORDER BY id LIMIT $2)`,
      [new Date(beforeMs), limit],
    );
    return rowCount ?? 0;
  }

  /** Un-parks the row of `eventId`: it is retried at once. */
  async resume(q: Queryable, eventId: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE ${this.#t} SET parked_at = NULL, attempts = 0, next_attempt_at = $2
        WHERE event_id = $1 AND parked_at IS NOT NULL AND published_at IS NULL`,
      [eventId, new Date(nowMs)],
    );
    return rowCount === 1;
  }

  /** Unpublished rows, parked ones among them, and the age of the oldest: the relay's lag. */
  async lag(
    q: Queryable,
    nowMs: number,
  ): Promise<{ unpublished: bigint; parked: bigint; oldestAgeMs: number }> {
    const { rows } = await q.query<{ n: bigint; parked: bigint; oldest: Date | null }>(
      `SELECT count(*) AS n, count(parked_at) AS parked, min(created_at) AS oldest
         FROM ${this.#t} WHERE published_at IS NULL`,
    );
    const oldest = rows[0]?.oldest ?? null;
    return {
      unpublished: rows[0]?.n ?? 0n,
      parked: rows[0]?.parked ?? 0n,
      oldestAgeMs: oldest === null ? 0 : Math.max(0, nowMs - oldest.getTime()),
    };
  }
}

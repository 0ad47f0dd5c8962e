/**
 * Idempotency keys in SQL (payments' PY-01…PY-04, PY-13), after Stripe's design: the FIRST act of
 * a request is one conditional INSERT on the (scope, key) primary key — never a
 * read-then-insert, so two concurrent requests can never both start (PY-02). The row
 * does not expire while its owner works (PY-03: no TTL lock): only an owner silent for
 * longer than the lease (a crash) can be taken over, by compare-and-set, and the
 * `generation` fencing token makes every later write of the old owner fail, rolling
 * back the transaction it was part of.
 *
 * Each saga step commits its own writes together with `advance` (Stripe's atomic
 * phases): pass the caller's transaction. The final response is stored by `complete`
 * in the transaction of the last writes, so a response is stored iff its effects are.
 *
 * Outcomes, as Stripe does them:
 * - validation errors (400) and IN_PROGRESS / MISMATCH: nothing is stored — validate
 *   before `begin`; a retry may start afresh.
 * - a final result, success or business refusal (2xx, 402 declined, 4xx from the
 *   endpoint's logic): `complete`; every retry replays it byte for byte.
 * - a transient failure (5xx: database or acquirer unavailable) whose phase rolled
 *   back: `release`. With nothing committed yet the row is deleted (a retry starts
 *   afresh, even with other parameters); past a recovery point the row is unlocked so
 *   a retry resumes from that point at once instead of waiting for the lease. (Stripe's
 *   public API also replays 500s; we follow Stripe's atomic-phases design instead,
 *   because our 5xx means "not finished", not "this is the answer".)
 *
 * All times come from the injected clock: replicas need clocks within a small fraction
 * of the lease (NTP), or a skewed replica could take a live claim over early.
 *
 * The table lives in the system's schema, named by the system (`table`, and `scopeColumn`
 * for the caller's id: `merchant_id`); `idempotencyTableSql` is its DDL for a migration. Errors
 * carry the system's codes (`errors`: `defineIdempotencyErrors("PAYMENTS")` →
 * `PAYMENTS_IDEMPOTENCY_IN_PROGRESS`, …).
 *
 * @example
 * const store = new IdempotencyStore(db, { table: "idempotency_keys", scopeColumn: "merchant_id", errors, clock });
 * const begun = await store.begin({ scope: scope, key, fingerprint });
 * if (begun.kind === "replay") return send(begun.response);
 * await db.transaction(async (tx) => {
 *   await reserveInLedger(tx, payment);
 *   await store.complete(tx, begun.lease, { status: 201, headers: { "content-type": "application/json" }, body });
 * });
 */

import { type Clock, systemClock } from "@casebook/kit/clock";
import {
  checkAdvance,
  checkFingerprint,
  checkScope,
  checkStoredResponse,
  DEFAULT_LEASE_S,
  DEFAULT_RETENTION_S,
  decideExisting,
  type ExistingEntry,
  type IdempotencyErrors,
  type IdempotencyPolicy,
  isExpired,
  RECOVERY_FINISHED,
  RECOVERY_STARTED,
  type RequestFingerprint,
  type StoredResponse,
  validateIdempotencyKey,
} from "@casebook/kit/idempotency";
import type { Database, Queryable } from "./sql.ts";
import { checkIdentifier } from "./sql-schema.ts";

export interface IdempotencyTableNames {
  /** The table, in the system's schema: `idempotency_keys`. */
  table: string;
  /** The caller's id column, the first half of the primary key: `merchant_id`, `tenant_id`. */
  scopeColumn: string;
}

export interface IdempotencyStoreOptions extends IdempotencyTableNames {
  /** The system's codes: `defineIdempotencyErrors("PAYMENTS")`. */
  errors: IdempotencyErrors;
  /** Source of every timestamp; default the system clock. */
  clock?: Clock;
  /** How long a key answers for its request before it reads as absent and may be pruned. Default 86 400. */
  retentionS?: number;
  /** How long an owner may stay silent (no begin/advance) before a retry may take its claim over. Default 60. */
  leaseS?: number;
}

export interface BeginInput {
  /** Whose key it is (a merchant, a tenant): keys of two scopes never meet. */
  scope: string;
  /** Already validated by the API (`validateIdempotencyKey`); checked again here as an assertion. */
  key: string;
  fingerprint: RequestFingerprint;
  /** Overrides the clock for this call. */
  nowMs?: number;
}

/** The caller's claim on a key; pass it to advance/complete/release. Stale after a take-over. */
export interface IdempotencyLease {
  readonly scope: string;
  readonly key: string;
  /** Fencing token: writes with an older generation fail with LOCK_LOST. */
  readonly generation: number;
  /** Where to resume: RECOVERY_STARTED for a fresh key, else the last committed saga step. */
  readonly recoveryPoint: string;
}

export type BeginResult =
  | { kind: "started"; lease: IdempotencyLease }
  | { kind: "replay"; response: StoredResponse };

/** Bound on insert/read/take-over rounds: another round happens only when the row changed in between. */
export const BEGIN_MAX_ROUNDS = 4;
/** Bound on one prune batch; the worker calls prune again while batches come back full. */
export const PRUNE_MAX_BATCH = 10_000;
/** Bound on one `recordMany` batch: its arrays (bodies included) travel as one statement's parameters. */
export const RECORD_MAX_BATCH = 10_000;

/** One key's record in `recordMany`: the step it advances to, or its final response. */
export type IdempotencyRecord =
  | { lease: IdempotencyLease; step: string }
  | { lease: IdempotencyLease; response: StoredResponse };

const COLUMNS =
  "request_method, request_path, body_sha256, status, recovery_point, generation, locked_at, created_at, response_status, response_headers, response_body";

interface KeyRow {
  request_method: string;
  request_path: string;
  body_sha256: string;
  status: "in_progress" | "completed";
  recovery_point: string;
  generation: number;
  locked_at: Date | null;
  created_at: Date;
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: Uint8Array | null;
}

/**
 * `WHERE` of every owner write: the row (columns prefixed `row`) is still the lease's
 * (scope, key, generation), in progress and locked. One text for the single writes and the
 * set-based one, so the two cannot drift apart.
 */
function ownedSql(row: string, scope: string, lease: { scope: string; key: string; generation: string }) {
  return `${row}${scope} = ${lease.scope} AND ${row}key = ${lease.key} AND ${row}generation = ${lease.generation} AND ${row}status = 'in_progress' AND ${row}locked_at IS NOT NULL`;
}

/** The statements of one table; `scope` is its scope column, checked as an identifier. */
function statements(table: string, scope: string) {
  return {
    insertOrReplaceExpired: `
  INSERT INTO ${table} AS k
    (${scope}, key, request_method, request_path, body_sha256, status, recovery_point, generation, locked_at, created_at)
  VALUES ($1, $2, $3, $4, $5, 'in_progress', '${RECOVERY_STARTED}', 1, $6, $6)
  ON CONFLICT (${scope}, key) DO UPDATE SET
    request_method = EXCLUDED.request_method, request_path = EXCLUDED.request_path,
    body_sha256 = EXCLUDED.body_sha256, status = 'in_progress', recovery_point = '${RECOVERY_STARTED}',
    generation = k.generation + 1, locked_at = EXCLUDED.locked_at, created_at = EXCLUDED.created_at,
    completed_at = NULL, response_status = NULL, response_headers = NULL, response_body = NULL
  WHERE k.created_at <= $7
  RETURNING generation`,
    takeOver: `
  UPDATE ${table} SET locked_at = $3, generation = generation + 1
  WHERE ${scope} = $1 AND key = $2 AND status = 'in_progress'
    AND generation = $4 AND locked_at IS NOT DISTINCT FROM $5::timestamptz
  RETURNING generation, recovery_point`,
    /** `WHERE` of every owner write: the row is still ours, in progress and locked by us. */
    owned: ownedSql("", scope, { scope: "$1", key: "$2", generation: "$3" }),
  };
}

/**
 * `advance` and `complete` of many leases, its parameters from `$offset+1`: one input row per
 * lease; `kind` picks the columns that differ, and an advance leaves the response columns as
 * they are.
 */
function recordManySql(table: string, scope: string, offset: number): string {
  const $ = (k: number) => `$${offset + k}`;
  return `
  UPDATE ${table} t SET
    status           = CASE i.kind WHEN 'complete' THEN 'completed' ELSE t.status END,
    recovery_point   = CASE i.kind WHEN 'complete' THEN '${RECOVERY_FINISHED}' ELSE i.step END,
    locked_at        = CASE i.kind WHEN 'complete' THEN NULL ELSE ${$(9)}::timestamptz END,
    completed_at     = CASE i.kind WHEN 'complete' THEN ${$(9)}::timestamptz ELSE t.completed_at END,
    response_status  = CASE i.kind WHEN 'complete' THEN i.response_status ELSE t.response_status END,
    response_headers = CASE i.kind WHEN 'complete' THEN i.response_headers::jsonb ELSE t.response_headers END,
    response_body    = CASE i.kind WHEN 'complete' THEN i.response_body ELSE t.response_body END
  FROM (SELECT * FROM unnest(${$(1)}::text[], ${$(2)}::text[], ${$(3)}::int4[], ${$(4)}::text[], ${$(5)}::text[], ${$(6)}::int4[], ${$(7)}::text[], ${$(8)}::bytea[])
          AS i(scope, key, generation, kind, step, response_status, response_headers, response_body)) i
  WHERE ${ownedSql("t.", scope, { scope: "i.scope", key: "i.key", generation: "i.generation" })}
  RETURNING t.${scope} AS scope, t.key`;
}

/**
 * The CREATE TABLE (and prune index) of an idempotency table, for a system's migration:
 * payments' 002_idempotency.sql is this with `idempotency_keys` and `merchant_id` (a test
 * checks the two build the same table).
 *
 * @example
 * migration("003_idempotency", idempotencyTableSql({ table: "idempotency_keys", scopeColumn: "tenant_id" }));
 */
export function idempotencyTableSql(names: IdempotencyTableNames): string {
  const table = checkIdentifier(names.table);
  const scope = checkIdentifier(names.scopeColumn);
  return `CREATE TABLE ${table} (
  ${scope} text NOT NULL CHECK (char_length(${scope}) BETWEEN 1 AND 255),
  key              text        NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
  -- The request fingerprint: a retry must match all three, else 422.
  request_method   text        NOT NULL,
  request_path     text        NOT NULL,
  body_sha256      text        NOT NULL CHECK (body_sha256 ~ '^[0-9a-f]{64}$'),
  status           text        NOT NULL CHECK (status IN ('in_progress', 'completed')),
  -- The step last committed (Stripe's atomic phases): a retry resumes from here.
  recovery_point   text        NOT NULL,
  -- Fencing token: bumped on every take-over, checked by advance/complete/release.
  generation       int4        NOT NULL DEFAULT 1 CHECK (generation >= 1),
  -- The owner's lease start; NULL when completed or released for a retry to resume.
  locked_at        timestamptz,
  created_at       timestamptz NOT NULL,
  completed_at     timestamptz,
  response_status  int4        CHECK (response_status BETWEEN 100 AND 599),
  response_headers jsonb,
  response_body    bytea,
  CONSTRAINT ${table}_pkey PRIMARY KEY (${scope}, key),
  CONSTRAINT ${table}_completed_has_response CHECK (
    (status = 'completed') = (completed_at IS NOT NULL AND response_status IS NOT NULL
                              AND response_headers IS NOT NULL AND response_body IS NOT NULL)
  ),
  CONSTRAINT ${table}_completed_unlocked CHECK (status = 'in_progress' OR locked_at IS NULL)
);
-- The prune walks the oldest rows first, a bounded batch at a time.
CREATE INDEX ${table}_created_at ON ${table} (created_at);
`;
}

function toEntry(row: KeyRow): ExistingEntry {
  const completed = row.status === "completed";
  return {
    fingerprint: { method: row.request_method, path: row.request_path, bodySha256: row.body_sha256 },
    status: row.status,
    recoveryPoint: row.recovery_point,
    lockedAtMs: row.locked_at === null ? null : row.locked_at.getTime(),
    createdAtMs: row.created_at.getTime(),
    response: completed
      ? {
          status: row.response_status as number,
          headers: row.response_headers ?? {},
          // A copy as a plain Uint8Array: pg hands out Buffers from a shared pool.
          body: new Uint8Array(row.response_body as Uint8Array),
        }
      : undefined,
  };
}

export class IdempotencyStore {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #policy: IdempotencyPolicy;
  readonly #errors: IdempotencyErrors;
  readonly #table: string;
  readonly #scope: string;
  readonly #sql: ReturnType<typeof statements>;

  constructor(db: Database, options: IdempotencyStoreOptions) {
    const retentionS = options.retentionS ?? DEFAULT_RETENTION_S;
    const leaseS = options.leaseS ?? DEFAULT_LEASE_S;
    if (!(leaseS > 0 && retentionS > leaseS)) throw new RangeError("need 0 < leaseS < retentionS");
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
    this.#policy = { leaseMs: leaseS * 1000, retentionMs: retentionS * 1000 };
    this.#errors = options.errors;
    this.#table = checkIdentifier(options.table);
    this.#scope = checkIdentifier(options.scopeColumn);
    this.#sql = statements(this.#table, this.#scope);
  }

  /**
   * Claims the key, as the request's first write, committed on its own so concurrent
   * duplicates see it. Returns `started` (fresh, or taken over from a crashed owner:
   * resume from `lease.recoveryPoint`) or `replay` (the completed response). Throws
   * <AREA>_IDEMPOTENCY_IN_PROGRESS (409) while another owner holds a live claim and
   * <AREA>_IDEMPOTENCY_MISMATCH (422, `mismatch` names method/path/body) when the key
   * was used for another request.
   *
   * @example
   * const begun = await store.begin({ scope: "m_1", key, fingerprint: fingerprintRequest(req) });
   */
  async begin(input: BeginInput): Promise<BeginResult> {
    const scope = checkScope(input.scope);
    const key = validateIdempotencyKey(input.key, this.#errors);
    const fingerprint = checkFingerprint(input.fingerprint);
    const nowMs = input.nowMs ?? this.#clock.nowMs();
    for (let round = 0; round < BEGIN_MAX_ROUNDS; round++) {
      const inserted = await this.#db.query<{ generation: number }>(this.#sql.insertOrReplaceExpired, [
        scope,
        key,
        fingerprint.method,
        fingerprint.path,
        fingerprint.bodySha256,
        new Date(nowMs),
        new Date(nowMs - this.#policy.retentionMs),
      ]);
      const generation = inserted.rows[0]?.generation;
      if (generation !== undefined) {
        return { kind: "started", lease: { scope, key, generation, recoveryPoint: RECOVERY_STARTED } };
      }
      const settled = await this.#settleExisting(scope, key, fingerprint, nowMs);
      if (settled !== undefined) return settled;
    }
    // Only a key deleted and re-claimed under us every round ends here: someone else is working on it.
    throw this.#errors.create("IN_PROGRESS", {
      fields: { retryAfterMs: 1_000, roundsMax: BEGIN_MAX_ROUNDS },
    });
  }

  /** The existing row decides; undefined when it changed under us and begin should go round again. */
  async #settleExisting(
    scope: string,
    key: string,
    fingerprint: RequestFingerprint,
    nowMs: number,
  ): Promise<BeginResult | undefined> {
    const row = await this.#read(this.#db, scope, key);
    if (row === undefined) return undefined; // released or pruned in between: insert again
    const decision = decideExisting(toEntry(row), { fingerprint, nowMs }, this.#policy);
    switch (decision.kind) {
      case "expired":
        return undefined;
      case "mismatch":
        throw this.#errors.create("MISMATCH", {
          fields: { mismatch: decision.parts },
        });
      case "replay":
        return { kind: "replay", response: decision.response };
      case "in_progress":
        throw this.#errors.create("IN_PROGRESS", {
          fields: { retryAfterMs: decision.retryAfterMs },
        });
      case "take_over": {
        // Compare-and-set on (generation, locked_at): of several retries only one wins;
        // a heartbeat from a live owner in between also makes it fail.
        const taken = await this.#db.query<{ generation: number; recovery_point: string }>(
          this.#sql.takeOver,
          [scope, key, new Date(nowMs), row.generation, row.locked_at],
        );
        const won = taken.rows[0];
        if (won === undefined) return undefined; // another retry won: the next round sees its live claim
        return {
          kind: "started",
          lease: { scope, key, generation: won.generation, recoveryPoint: won.recovery_point },
        };
      }
    }
  }

  async #read(q: Queryable, scope: string, key: string): Promise<KeyRow | undefined> {
    const { rows } = await q.query<KeyRow>(
      `SELECT ${COLUMNS} FROM ${this.#table} WHERE ${this.#scope} = $1 AND key = $2`,
      [scope, key],
    );
    return rows[0];
  }

  /**
   * Records that saga step `step` committed, in the caller's transaction `tx` together
   * with that step's own writes, and renews the lease. Returns the lease to use next.
   * Throws <AREA>_IDEMPOTENCY_LOCK_LOST when a retry took the key over: the caller's
   * transaction must then roll back (it does, since the error propagates).
   *
   * @example
   * lease = await db.transaction(async (tx) => { await insertPending(tx); return store.advance(tx, lease, "reserved"); });
   */
  async advance(
    tx: Queryable,
    lease: IdempotencyLease,
    step: string,
    nowMs?: number,
  ): Promise<IdempotencyLease> {
    const to = checkAdvance(lease.recoveryPoint, step);
    const at = new Date(nowMs ?? this.#clock.nowMs());
    const updated = await tx.query(
      `UPDATE ${this.#table} SET recovery_point = $4, locked_at = $5 WHERE ${this.#sql.owned}`,
      [lease.scope, lease.key, lease.generation, to, at],
    );
    if (updated.rowCount !== 1) throw this.#lockLost(lease);
    return { ...lease, recoveryPoint: to };
  }

  /**
   * Stores the final response (status, selected headers, exact body bytes) in the
   * caller's transaction, with the request's last writes; every later `begin` with the
   * same key and parameters replays it. Throws LOCK_LOST like `advance`.
   *
   * @example
   * await store.complete(tx, lease, { status: 201, headers: { "content-type": "application/json" }, body });
   */
  async complete(
    tx: Queryable,
    lease: IdempotencyLease,
    response: StoredResponse,
    nowMs?: number,
  ): Promise<void> {
    const checked = checkStoredResponse(response, this.#errors);
    if (lease.recoveryPoint === RECOVERY_FINISHED)
      throw new RangeError("this lease already completed its key");
    const at = new Date(nowMs ?? this.#clock.nowMs());
    const updated = await tx.query(
      `UPDATE ${this.#table}
         SET status = 'completed', recovery_point = '${RECOVERY_FINISHED}', locked_at = NULL, completed_at = $4,
             response_status = $5, response_headers = $6, response_body = $7
       WHERE ${this.#sql.owned}`,
      [
        lease.scope,
        lease.key,
        lease.generation,
        at,
        checked.status,
        JSON.stringify(checked.headers),
        Buffer.from(checked.body.buffer, checked.body.byteOffset, checked.body.byteLength),
      ],
    );
    if (updated.rowCount !== 1) throw this.#lockLost(lease);
  }

  /**
   * `advance` and `complete` of many keys in ONE statement, in the caller's transaction `tx`:
   * per record, true when written (the lease still owned the key), false when the lease was
   * lost (a retry took the key over) — it never throws LOCK_LOST; the caller decides (it must
   * roll back whatever it wrote for a lost one). Same checks as the single forms (RangeError
   * for a completed lease, a bad step order, a key twice in one call; the response checks),
   * all made before the statement is sent. At most RECORD_MAX_BATCH records.
   *
   * @example
   * const written = await db.transaction((tx) =>
   *   store.recordMany(tx, [{ lease: a, step: "reserved" }, { lease: b, response: created }]),
   * ); // [true, false]: b's key was taken over — roll b's writes back
   */
  async recordMany(tx: Queryable, records: readonly IdempotencyRecord[], nowMs?: number): Promise<boolean[]> {
    if (records.length === 0) return [];
    const statement = this.recordManyStatement(records, nowMs ?? this.#clock.nowMs(), 0);
    const { rows } = await tx.query<{ scope: string; key: string }>(statement.text, statement.params);
    const written = new Set(rows.map((row) => JSON.stringify([row.scope, row.key])));
    if (written.size !== rows.length) throw new Error("invariant: recordMany wrote a key twice");
    return records.map((r) => written.has(JSON.stringify([r.lease.scope, r.lease.key])));
  }

  /**
   * `recordMany` as a statement to compose — a data-modifying CTE (`WITH recorded AS (…)`) — for
   * a caller that records the keys and writes its own rows in ONE autocommit statement: one row
   * per key still owned (a lost lease has none), so the caller compares the count and must make
   * the statement fail when one is missing. Its parameters are `$offset+1…`. Same checks as
   * `recordMany` (RangeError for a bad step order, a key twice, an empty or too large batch).
   *
   * @example
   * const recorded = store.recordManyStatement([{ lease, response }], nowMs, 4);
   * await db.query(`WITH recorded AS (${recorded.text}) …`, [...mine, ...recorded.params]);
   */
  recordManyStatement(
    records: readonly IdempotencyRecord[],
    nowMs: number,
    offset: number,
  ): { text: string; params: unknown[] } {
    if (records.length === 0 || records.length > RECORD_MAX_BATCH) {
      throw new RangeError(`recordMany takes 1..${RECORD_MAX_BATCH} records, got ${records.length}`);
    }
    if (new Set(records.map((r) => JSON.stringify([r.lease.scope, r.lease.key]))).size !== records.length)
      throw new RangeError("a key appears twice in one recordMany call");
    const columns = records.map((record) => this.#recordColumns(record));
    return {
      text: recordManySql(this.#table, this.#scope, offset),
      params: [
        records.map((r) => r.lease.scope),
        records.map((r) => r.lease.key),
        records.map((r) => r.lease.generation),
        columns.map((c) => c.kind),
        columns.map((c) => c.step),
        columns.map((c) => c.status),
        columns.map((c) => c.headers),
        columns.map((c) => c.body),
        new Date(nowMs),
      ],
    };
  }

  /** One record's input row for `recordMany`, after the checks of `advance` or `complete`. */
  #recordColumns(record: IdempotencyRecord) {
    if ("step" in record) {
      const step = checkAdvance(record.lease.recoveryPoint, record.step);
      return { kind: "advance", step, status: null, headers: null, body: null };
    }
    const checked = checkStoredResponse(record.response, this.#errors);
    if (record.lease.recoveryPoint === RECOVERY_FINISHED)
      throw new RangeError("this lease already completed its key");
    return {
      kind: "complete",
      step: null,
      status: checked.status,
      headers: JSON.stringify(checked.headers),
      body: Buffer.from(checked.body.buffer, checked.body.byteOffset, checked.body.byteLength),
    };
  }

  /** How long a claim holds without a write or a renewal before a retry may take it over, in ms. */
  get leaseMs(): number {
    return this.#policy.leaseMs;
  }

  /**
   * Extends the claim's lease to `nowMs` without changing its recovery point: the holder of a
   * short lease calls it while its work runs (kit's `LeaseRenewal`). False when the claim is no
   * longer this lease's (completed, taken over by a retry, or released).
   *
   * @example
   * const held = await store.renew(db, lease);
   */
  async renew(
    q: Queryable,
    lease: Pick<IdempotencyLease, "scope" | "key" | "generation">,
    nowMs?: number,
  ): Promise<boolean> {
    const at = new Date(nowMs ?? this.#clock.nowMs());
    const { rowCount } = await q.query(`UPDATE ${this.#table} SET locked_at = $4 WHERE ${this.#sql.owned}`, [
      lease.scope,
      lease.key,
      lease.generation,
      at,
    ]);
    return rowCount === 1;
  }

  /**
   * Gives the claim up after a transient failure whose writes rolled back: deletes the
   * key when nothing committed yet (recovery point "started"), else unlocks it so a
   * retry resumes from the recovery point without waiting for the lease. Returns false
   * (and changes nothing) when the lease was already lost: never throws on a failure path.
   *
   * @example
   * try { ... } catch (err) { await store.release(db, lease); throw err; }
   */
  async release(q: Queryable, lease: IdempotencyLease): Promise<boolean> {
    const params = [lease.scope, lease.key, lease.generation];
    const result =
      lease.recoveryPoint === RECOVERY_STARTED
        ? await q.query(
            `DELETE FROM ${this.#table} WHERE ${this.#sql.owned} AND recovery_point = '${RECOVERY_STARTED}'`,
            params,
          )
        : await q.query(`UPDATE ${this.#table} SET locked_at = NULL WHERE ${this.#sql.owned}`, params);
    return result.rowCount === 1;
  }

  /**
   * Deletes a fresh claim its request may have made without learning it: `begin` failed after
   * its INSERT was sent (the answer was lost with the link, or a silent link delivered it late),
   * so the request answered 503 holding no lease, and the claim would answer 409 to every retry
   * until its lease ran out. The claim is recognised by its key and the instant `begin` stamped
   * on it (`nowMs` of BeginInput), and deleted only while nothing of the request committed
   * ("started") and nobody took it over. True when a claim was deleted.
   *
   * @example
   * await store.abandonUnacknowledged(db, { scope, key, claimedAtMs }); // after begin threw SQL_UNAVAILABLE
   */
  async abandonUnacknowledged(
    q: Queryable,
    claim: { scope: string; key: string; claimedAtMs: number },
  ): Promise<boolean> {
    const at = new Date(claim.claimedAtMs);
    const deleted = await q.query(
      `DELETE FROM ${this.#table}
        WHERE ${this.#scope} = $1 AND key = $2 AND status = 'in_progress' AND recovery_point = '${RECOVERY_STARTED}'
          AND created_at = $3 AND locked_at = $3`,
      [claim.scope, claim.key, at],
    );
    return deleted.rowCount === 1;
  }

  /** The key's entry, or undefined when absent or expired (PY-04: reads ignore expired entries). */
  async find(scope: string, key: string, nowMs?: number): Promise<ExistingEntry | undefined> {
    const row = await this.#read(this.#db, scope, key);
    if (row === undefined) return undefined;
    const entry = toEntry(row);
    return isExpired(entry.createdAtMs, nowMs ?? this.#clock.nowMs(), this.#policy.retentionMs)
      ? undefined
      : entry;
  }

  /**
   * Deletes at most `maxBatch` keys created at or before `olderThanMs` (default: now
   * minus the retention), oldest first, skipping rows another transaction holds.
   * Refuses a cut-off younger than the retention: keys live at least `retentionS`.
   * Returns how many were deleted; call again while it returns `maxBatch`.
   *
   * @example
   * while ((await store.prune({ maxBatch: 1_000 })) === 1_000) {}
   */
  async prune(options: { maxBatch: number; olderThanMs?: number; nowMs?: number }): Promise<number> {
    const { maxBatch } = options;
    if (!Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > PRUNE_MAX_BATCH) {
      throw new RangeError(`maxBatch must be an integer in 1..${PRUNE_MAX_BATCH}`);
    }
    const limitMs = (options.nowMs ?? this.#clock.nowMs()) - this.#policy.retentionMs;
    const olderThanMs = options.olderThanMs ?? limitMs;
    if (olderThanMs > limitMs) throw new RangeError("prune would delete keys younger than the retention");
    const deleted = await this.#db.query(
      `DELETE FROM ${this.#table} WHERE (${this.#scope}, key) IN (
         SELECT ${this.#scope}, key FROM ${this.#table} WHERE created_at <= $1
         ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [new Date(olderThanMs), maxBatch],
    );
    return deleted.rowCount;
  }

  #lockLost(lease: IdempotencyLease) {
    return this.#errors.create("LOCK_LOST", {
      fields: { key: lease.key, generation: lease.generation },
    });
  }
}

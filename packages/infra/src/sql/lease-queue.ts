/**
 * The leased claim queue: work items are rows of the caller's table, handed out to
 * concurrent workers (threads, processes, hosts) over one PostgreSQL — never two owners,
 * a late write loses, a stranded claim comes back within its lease.
 *
 * - **claim** — `FOR UPDATE SKIP LOCKED` in a CTE, so concurrent claimers take disjoint rows
 *   without waiting on each other (on PGlite claims run one after another and the filter
 *   sees the previous claim: disjoint too). Each claimed row gets a lease: `lease_owner`,
 *   `lease_expires_at`, and a bumped `lease_version`, the fence of every later write.
 * - **fenced writes** (`update`, `updateMany`, `release`, `renew`) are compare-and-swaps on
 *   (id, lease_version, lease_owner) plus the caller's `held` predicate; they say whether
 *   they won. A worker whose lease expired and was claimed again loses: the new claim bumped
 *   the version.
 * - **renew** extends a live lease of the same version (a long job), without bumping it.
 * - **release** gives a row back unworked: due at once, version bumped.
 * - **releaseOrphaned** gives back an owner's leases it does not hold: the claims of a claim
 *   statement whose answer was lost (the database went away after it committed), which the
 *   owner never saw and cannot name by version. `reclaimOwn` (a claim option) is the other
 *   way to the same end: the owner claims its own stranded leases again at once.
 *
 * One lease vocabulary for every table: `lease_owner text`, `lease_expires_at timestamptz`,
 * `lease_version int8`, `next_attempt_at timestamptz` (when the row is due). The queue owns
 * these columns; the caller's repository keeps its domain rules as SQL fragments: which
 * rows are claimable (`claimable`), what a held row looks like (`held`), what a claim or a
 * release also sets (`onClaim`, `onRelease`). Fragments are the repository's own constant
 * SQL over the alias `t`, never built from input; their values go in through `p.add(value)`,
 * which returns the placeholder. Table and column names are checked identifiers.
 *
 * Times are passed in (`nowMs`): the caller's clock decides, so tests run on a manual clock.
 *
 * @example
 * const jobs = new LeaseQueue<{ payload: string }, bigint>({
 *   table: "jobs", idType: "int8", claimable: "t.done_at IS NULL", minLeaseMs: 5_000,
 * });
 * const claimed = await jobs.claim(db, { owner: leaseOwnerId(), nowMs: clock.nowMs(), leaseMs: 30_000, limit: 10 });
 * for (const { lease, row } of claimed) {
 *   await work(row.payload);
 *   const write = await jobs.update(db, lease, { nowMs: clock.nowMs(), set: (p) => `done_at = ${p.now}` });
 *   if (!write.won) log.warn("lease lost: another worker owns this job now");
 * }
 */
import type { Queryable } from "./sql.ts";
import { checkIdentifier, quoteIdentifier } from "./sql-schema.ts";

/** Hard ceiling of `maxClaimLimit`: every claimed row is leased for `leaseMs`, so a huge claim idles work. */
export const MAX_CLAIM_LIMIT = 10_000;
/** Default largest claim of a queue. */
export const DEFAULT_MAX_CLAIM_LIMIT = 1_000;
/** Longest lease: a stranded claim must come back within it, so a day is already generous. */
export const MAX_LEASE_MS = 86_400_000;
/** Largest batch of one `updateMany` or `releaseOrphaned` keep-list. */
export const MAX_FENCED_BATCH = 10_000;

export type LeaseId = string | bigint;

/** A worker's hold on one row: the token its fenced writes compare-and-swap on. */
export interface Lease<Id extends LeaseId = LeaseId> {
  id: Id;
  leaseVersion: bigint;
  owner: string;
  leaseExpiresAtMs: number;
}

/** A claimed row: the lease, who held it before (an expired or reclaimed lease), and the RETURNed columns. */
export interface Claimed<Row, Id extends LeaseId = LeaseId> {
  lease: Lease<Id>;
  /** The owner whose lease this claim took over, or null for a row nobody held. */
  previousOwner: string | null;
  row: Row;
}

/** Placeholders a fragment may use; `add` binds one more value and returns its `$n`. */
export interface LeaseSql {
  /** `nowMs` as a timestamptz. */
  readonly now: string;
  add(value: unknown): string;
}

/** A fragment of the caller's SQL over alias `t`: constant text, or text with bound values. */
export type Fragment = string | ((p: LeaseSql) => string);

export interface LeaseQueueOptions {
  /** The caller's table (a checked identifier, in the session's schema). */
  table: string;
  /** Primary key column; default `id`. */
  idColumn?: string;
  /** The id's SQL type, for array parameters. */
  idType: "text" | "int8";
  /**
   * Which rows may be handed out at all, beside "due and not leased" (the queue's part):
   * `t.step <> 'done'`. Alias `t`.
   */
  claimable: Fragment;
  /** What every fenced write also requires of the row (`t.state = 'in_flight'`); default none. */
  held?: string;
  /** Claim order; default `t.next_attempt_at`. */
  order?: string;
  /** Columns a claim and `update` RETURN; default `t.*`. */
  returning?: string;
  /** More SET clauses of a claim (`state = 'in_flight', updated_at = ${p.now}`). */
  onClaim?: Fragment;
  /** More SET clauses of `release` and `releaseOrphaned` (`state = 'pending'`). */
  onRelease?: Fragment;
  /** More SET clauses of `renew` (`updated_at = ${p.now}`). */
  onRenew?: Fragment;
  /**
   * A held row's `next_attempt_at` is its lease end (claim and renew set both), so "due" alone
   * says when it comes back. Default false: `next_attempt_at` is the caller's to set.
   */
  dueAtLeaseEnd?: boolean;
  /** Shortest lease a claim may ask for (the work's deadline + headroom for its write). */
  minLeaseMs: number;
  /** Largest claim; default DEFAULT_MAX_CLAIM_LIMIT, at most MAX_CLAIM_LIMIT. */
  maxClaimLimit?: number;
}

export interface ClaimRequest {
  owner: string;
  nowMs: number;
  leaseMs: number;
  /** 1..maxClaimLimit rows. */
  limit: number;
  /** This call's floor on `leaseMs`, above the queue's `minLeaseMs` (a per-call deadline). */
  minLeaseMs?: number;
  /** One more filter for this call (a tenant), alias `t`. */
  where?: Fragment;
  /**
   * Also claim `owner`'s own live leases granted up to `leasedUpToMs` (lease end ≤ it +
   * leaseMs) on rows not in `exceptIds`: the claims a database failure stranded, taken back at
   * once instead of after the lease. They come back with `previousOwner` = owner.
   */
  reclaimOwn?: { exceptIds: readonly LeaseId[]; leasedUpToMs: number };
}

/** A claim of one named row: due or not (a deliberate drive), when no live lease holds it. */
export interface ClaimByIdRequest {
  owner: string;
  nowMs: number;
  leaseMs: number;
  minLeaseMs?: number;
  /** Also claim it when `owner` holds a live lease on it (an inline drive taking over its own claim). */
  orOwn?: boolean;
  /**
   * `skip` (default): a row another transaction has locked is not claimed. `wait`: wait for that
   * transaction and decide on the row as it then is.
   */
  locked?: "skip" | "wait";
}

/** What a fenced `update` does to the lease besides bumping its version. */
export type LeaseAfterWrite = "release" | "keep" | { renewUntilMs: number };

export interface FencedUpdate {
  nowMs: number;
  /** SET clauses of the write (alias `t` on the right-hand side). */
  set: Fragment;
  /** Default `release`: the write ends the claim. */
  lease?: LeaseAfterWrite;
}

export type FencedWrite<Row> = { won: true; row: Row } | { won: false };

/** One column of per-row input to `updateMany`, read as `i.<name>` in `set`. */
export interface BatchColumn {
  name: string;
  /** Element SQL type (`timestamptz`, `text`, `int4`…). */
  type: string;
  values: readonly unknown[];
}

export interface FencedBatchUpdate {
  nowMs: number;
  columns?: readonly BatchColumn[];
  /** SET clauses; per-row input as `i.<column>`. */
  set: Fragment;
  /**
   * Per lease (same order): a time keeps the claim and renews it until then (`update`'s
   * `{ renewUntilMs }`), null ends it. Default: every claim ends (`release`).
   */
  renewUntilMs?: readonly (number | null)[];
}

const TYPE_PATTERN = /^[a-z][a-z0-9 ]{0,31}$/;

/** Binds values in order; `now` is bound on first use only (an unused parameter has no type to infer). */
class Binder implements LeaseSql {
  readonly values: unknown[] = [];
  readonly #nowMs: number;
  readonly #offset: number;
  #now: string | undefined;
  /** Parameters numbered from `$offset+1` (a statement composed into a larger one). */
  constructor(nowMs: number, offset = 0) {
    this.#nowMs = nowMs;
    this.#offset = offset;
  }
  get now(): string {
    this.#now ??= this.add(new Date(this.#nowMs));
    return this.#now;
  }
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.#offset + this.values.length}`;
  }
  render(fragment: Fragment | undefined): string {
    if (fragment === undefined) return "";
    return typeof fragment === "string" ? fragment : fragment(this);
  }
}

function checkTime(name: string, ms: number): void {
  if (!Number.isFinite(ms)) throw new RangeError(`${name} must be a finite epoch ms, got ${ms}`);
}

function checkOwner(owner: string): void {
  if (typeof owner !== "string" || owner.length < 1 || owner.length > 200)
    throw new RangeError(`lease owner must be 1..200 characters, got ${JSON.stringify(owner)}`);
}

function leaseOf<Id extends LeaseId>(id: Id, version: bigint, owner: string, untilMs: number): Lease<Id> {
  return { id, leaseVersion: version, owner, leaseExpiresAtMs: untilMs };
}

/** The claim queue over one table; see the file comment. Stateless: one per table, shared by every worker. */
export class LeaseQueue<Row extends object = Record<string, unknown>, Id extends LeaseId = LeaseId> {
  readonly table: string;
  readonly minLeaseMs: number;
  readonly maxClaimLimit: number;
  readonly #o: LeaseQueueOptions;
  readonly #t: string;
  readonly #id: string;
  readonly #held: string;

  constructor(options: LeaseQueueOptions) {
    this.#o = options;
    this.table = checkIdentifier(options.table);
    this.#t = quoteIdentifier(options.table);
    this.#id = quoteIdentifier(options.idColumn ?? "id");
    if (options.idType !== "text" && options.idType !== "int8")
      throw new RangeError(`idType must be text or int8, got ${options.idType}`);
    this.#held = options.held === undefined ? "" : ` AND (${options.held})`;
    if (!Number.isInteger(options.minLeaseMs) || options.minLeaseMs < 1 || options.minLeaseMs > MAX_LEASE_MS)
      throw new RangeError(`minLeaseMs must be an integer in 1..${MAX_LEASE_MS}, got ${options.minLeaseMs}`);
    this.minLeaseMs = options.minLeaseMs;
    this.maxClaimLimit = options.maxClaimLimit ?? DEFAULT_MAX_CLAIM_LIMIT;
    if (
      !Number.isInteger(this.maxClaimLimit) ||
      this.maxClaimLimit < 1 ||
      this.maxClaimLimit > MAX_CLAIM_LIMIT
    )
      throw new RangeError(
        `maxClaimLimit must be an integer in 1..${MAX_CLAIM_LIMIT}, got ${this.maxClaimLimit}`,
      );
  }

  /** Throws RangeError unless `leaseMs` is an integer in [max(minLeaseMs, floorMs), MAX_LEASE_MS]. */
  checkLease(leaseMs: number, floorMs = 0): void {
    const minLeaseMs = Math.max(this.minLeaseMs, floorMs);
    if (!Number.isInteger(leaseMs) || leaseMs < minLeaseMs || leaseMs > MAX_LEASE_MS)
      throw new RangeError(
        `${this.table}: leaseMs must be an integer in ${minLeaseMs}..${MAX_LEASE_MS} (the work's deadline plus headroom), got ${leaseMs}`,
      );
  }

  /**
   * Claims up to `limit` due rows (claimable, `next_attempt_at` ≤ now, not leased or the lease
   * expired), in `order`, for `leaseMs`.
   */
  async claim(q: Queryable, request: ClaimRequest): Promise<Claimed<Row, Id>[]> {
    checkOwner(request.owner);
    checkTime("nowMs", request.nowMs);
    this.checkLease(request.leaseMs, request.minLeaseMs);
    if (!Number.isInteger(request.limit) || request.limit < 1 || request.limit > this.maxClaimLimit)
      throw new RangeError(
        `${this.table}: limit must be an integer in 1..${this.maxClaimLimit}, got ${request.limit}`,
      );
    const p = new Binder(request.nowMs);
    const owner = p.add(request.owner);
    const leaseEndMs = request.nowMs + request.leaseMs;
    const leaseEnd = p.add(new Date(leaseEndMs));
    let own = "";
    if (request.reclaimOwn !== undefined) {
      const { exceptIds, leasedUpToMs } = request.reclaimOwn;
      checkTime("reclaimOwn.leasedUpToMs", leasedUpToMs);
      this.#checkBatch(exceptIds.length);
      own = ` OR (t.lease_owner = ${owner} AND t.lease_expires_at <= ${p.add(new Date(leasedUpToMs + request.leaseMs))}
              AND NOT (t.${this.#id} = ANY(${p.add(exceptIds)}::${this.#o.idType}[])))`;
    }
    const where = request.where === undefined ? "" : ` AND (${p.render(request.where)})`;
    const selector = `(${p.render(this.#o.claimable)})${where} AND t.next_attempt_at <= ${p.now}
        AND (t.lease_expires_at IS NULL OR t.lease_expires_at <= ${p.now}${own})`;
    const limit = `LIMIT ${p.add(request.limit)}`;
    const rows = await this.#claimRows(q, p, { selector, limit, owner, leaseEnd, locked: "skip" });
    return rows.map((r) => this.#claimed(r, request.owner, leaseEndMs));
  }

  /** Claims one row by id when it is claimable and not held by a live lease (or, with `orOwn`, held by `owner`). */
  async claimById(q: Queryable, id: Id, request: ClaimByIdRequest): Promise<Claimed<Row, Id> | undefined> {
    checkOwner(request.owner);
    checkTime("nowMs", request.nowMs);
    this.checkLease(request.leaseMs, request.minLeaseMs);
    const p = new Binder(request.nowMs);
    const owner = p.add(request.owner);
    const leaseEndMs = request.nowMs + request.leaseMs;
    const leaseEnd = p.add(new Date(leaseEndMs));
    const own = request.orOwn === true ? ` OR t.lease_owner = ${owner}` : "";
    const selector = `t.${this.#id} = ${p.add(id)} AND (${p.render(this.#o.claimable)})
        AND (t.lease_expires_at IS NULL OR t.lease_expires_at <= ${p.now}${own})`;
    const rows = await this.#claimRows(q, p, {
      selector,
      limit: "",
      owner,
      leaseEnd,
      locked: request.locked ?? "skip",
    });
    return rows[0] === undefined ? undefined : this.#claimed(rows[0], request.owner, leaseEndMs);
  }

  async #claimRows(
    q: Queryable,
    p: Binder,
    s: { selector: string; limit: string; owner: string; leaseEnd: string; locked: "skip" | "wait" },
  ): Promise<Record<string, unknown>[]> {
    const o = this.#o;
    const due = o.dueAtLeaseEnd === true ? `, next_attempt_at = ${s.leaseEnd}` : "";
    const more = o.onClaim === undefined ? "" : `, ${p.render(o.onClaim)}`;
    const order = s.limit === "" ? "" : `ORDER BY ${o.order ?? "t.next_attempt_at"}`;
    const sql = `
      WITH lease_due AS (
        SELECT t.${this.#id} AS lease_claim_id, t.lease_owner AS lease_previous_owner FROM ${this.#t} t
         WHERE ${s.selector}
         ${order} ${s.limit}
         FOR UPDATE OF t${s.locked === "skip" ? " SKIP LOCKED" : ""})
      UPDATE ${this.#t} t
         SET lease_owner = ${s.owner}, lease_expires_at = ${s.leaseEnd},
             lease_version = t.lease_version + 1${due}${more}
        FROM lease_due WHERE t.${this.#id} = lease_due.lease_claim_id
      RETURNING ${o.returning ?? "t.*"}, t.${this.#id} AS lease_claim_id, t.lease_version AS lease_claim_version,
                lease_due.lease_previous_owner`;
    const { rows } = await q.query<Record<string, unknown>>(sql, p.values);
    return rows;
  }

  #claimed(r: Record<string, unknown>, owner: string, leaseEndMs: number): Claimed<Row, Id> {
    const { lease_claim_id, lease_claim_version, lease_previous_owner, ...row } = r;
    return {
      lease: leaseOf(lease_claim_id as Id, lease_claim_version as bigint, owner, leaseEndMs),
      previousOwner: (lease_previous_owner as string | null) ?? null,
      row: row as Row,
    };
  }

  /**
   * The fence of a write over the table as alias `t`, for a statement that does more than
   * `update` (a CTE that also inserts): `id`, `version` and `owner` are SQL expressions
   * (`i.id`, `$2`). With `releaseSql()` it is the whole lease rule such a statement needs.
   */
  fenceSql(expr: { id: string; version: string; owner: string }): string {
    return `t.${this.#id} = ${expr.id} AND t.lease_version = ${expr.version} AND t.lease_owner = ${expr.owner}${this.#held}`;
  }

  /** SET clauses that end a claim (alias `t`): owner and expiry cleared, version bumped. */
  releaseSql(): string {
    return "lease_owner = NULL, lease_expires_at = NULL, lease_version = t.lease_version + 1";
  }

  /**
   * A compare-and-swap write under `lease`: `set` applied and the version bumped when the row
   * is still this lease's (same version and owner, and `held`); `{ won: false }` otherwise.
   * `lease`: `release` (default, the claim is done — complete), `keep`, or `{ renewUntilMs }`.
   */
  async update(q: Queryable, lease: Lease<Id>, write: FencedUpdate): Promise<FencedWrite<Row>> {
    checkTime("nowMs", write.nowMs);
    const p = new Binder(write.nowMs);
    const after = write.lease ?? "release";
    let leaseSet = "";
    if (after === "release") leaseSet = ", lease_owner = NULL, lease_expires_at = NULL";
    else if (after !== "keep") {
      checkTime("renewUntilMs", after.renewUntilMs);
      const until = p.add(new Date(after.renewUntilMs));
      leaseSet = `, lease_expires_at = ${until}${this.#o.dueAtLeaseEnd === true ? `, next_attempt_at = ${until}` : ""}`;
    }
    const set = p.render(write.set);
    const fence = this.fenceSql({
      id: p.add(lease.id),
      version: p.add(lease.leaseVersion),
      owner: p.add(lease.owner),
    });
    const { rows } = await q.query<Row>(
      `UPDATE ${this.#t} t SET ${set}, lease_version = t.lease_version + 1${leaseSet}
        WHERE ${fence} RETURNING ${this.#o.returning ?? "t.*"}`,
      p.values,
    );
    return rows[0] === undefined ? { won: false } : { won: true, row: rows[0] };
  }

  /**
   * `update` of many leases in one statement; per-row input in `columns` (same order as
   * `leases`). Each claim ends, or — per lease, with `renewUntilMs` — is kept and renewed. One
   * write per input, in input order. RangeError on a duplicate id.
   */
  async updateMany(
    q: Queryable,
    leases: readonly Lease<Id>[],
    write: FencedBatchUpdate,
  ): Promise<FencedWrite<Row>[]> {
    if (leases.length === 0) return [];
    const statement = this.updateManyStatement(leases, write, 0);
    const { rows } = await q.query<Record<string, unknown>>(statement.text, statement.params);
    const byId = new Map(rows.map(({ lease_claim_id, ...row }) => [String(lease_claim_id), row as Row]));
    return leases.map((l) => {
      const row = byId.get(String(l.id));
      return row === undefined ? { won: false } : { won: true, row };
    });
  }

  /**
   * `updateMany` as a statement to compose — a data-modifying CTE of a caller's larger statement
   * (`WITH states AS (…) …`): one row per lease still held (its `returning` columns and
   * `lease_claim_id`), none for a lost one, so the caller compares the count. Its parameters are
   * `$offset+1…`. Same checks as `updateMany` (RangeError), and at least one lease.
   *
   * @example
   * const states = queue.updateManyStatement(leases, { nowMs, set: "result = 'done'" }, 0);
   * await db.query(`WITH states AS (${states.text}) SELECT count(*) FROM states`, states.params);
   */
  updateManyStatement(
    leases: readonly Lease<Id>[],
    write: FencedBatchUpdate,
    offset: number,
  ): { text: string; params: unknown[] } {
    if (leases.length === 0) throw new RangeError(`${this.table}: a fenced batch needs a lease`);
    this.#checkBatch(leases.length);
    checkTime("nowMs", write.nowMs);
    if (new Set(leases.map((l) => l.id)).size !== leases.length)
      throw new RangeError(`${this.table}: a row appears twice in one fenced batch`);
    const p = new Binder(write.nowMs, offset);
    const columns = write.columns ?? [];
    const arrays = [
      `${p.add(leases.map((l) => l.id))}::${this.#o.idType}[]`,
      `${p.add(leases.map((l) => l.leaseVersion))}::int8[]`,
      `${p.add(leases.map((l) => l.owner))}::text[]`,
    ];
    const names = ["lease_id", "lease_version", "lease_owner"];
    for (const c of columns) {
      if (!TYPE_PATTERN.test(c.type)) throw new RangeError(`column ${c.name}: bad SQL type ${c.type}`);
      if (c.values.length !== leases.length)
        throw new RangeError(`column ${c.name}: ${c.values.length} values for ${leases.length} leases`);
      arrays.push(`${p.add(c.values)}::${c.type}[]`);
      names.push(checkIdentifier(c.name));
    }
    const set = p.render(write.set);
    let leaseSet = this.releaseSql();
    if (write.renewUntilMs !== undefined) {
      if (write.renewUntilMs.length !== leases.length)
        throw new RangeError(`renewUntilMs: ${write.renewUntilMs.length} values for ${leases.length} leases`);
      const until = write.renewUntilMs.map((ms) => {
        if (ms === null) return null;
        checkTime("renewUntilMs", ms);
        return new Date(ms);
      });
      arrays.push(`${p.add(until)}::timestamptz[]`);
      names.push("lease_renew_until");
      leaseSet = `lease_owner = CASE WHEN i.lease_renew_until IS NULL THEN NULL ELSE t.lease_owner END,
        lease_expires_at = i.lease_renew_until, lease_version = t.lease_version + 1${
          this.#o.dueAtLeaseEnd === true
            ? ", next_attempt_at = COALESCE(i.lease_renew_until, t.next_attempt_at)"
            : ""
        }`;
    }
    return {
      text: `UPDATE ${this.#t} t SET ${set}, ${leaseSet}
         FROM (SELECT * FROM unnest(${arrays.join(", ")}) AS i(${names.join(", ")})) i
        WHERE ${this.fenceSql({ id: "i.lease_id", version: "i.lease_version", owner: "i.lease_owner" })}
       RETURNING ${this.#o.returning ?? "t.*"}, t.${this.#id} AS lease_claim_id`,
      params: p.values,
    };
  }

  /** Extends a live lease (same version, owner, not yet expired) to `nowMs + leaseMs`; undefined when lost. */
  async renew(
    q: Queryable,
    lease: Lease<Id>,
    options: { nowMs: number; leaseMs: number; minLeaseMs?: number },
  ): Promise<Lease<Id> | undefined> {
    checkTime("nowMs", options.nowMs);
    this.checkLease(options.leaseMs, options.minLeaseMs);
    const p = new Binder(options.nowMs);
    const untilMs = options.nowMs + options.leaseMs;
    const until = p.add(new Date(untilMs));
    const due = this.#o.dueAtLeaseEnd === true ? `, next_attempt_at = ${until}` : "";
    const more = this.#o.onRenew === undefined ? "" : `, ${p.render(this.#o.onRenew)}`;
    const fence = this.fenceSql({
      id: p.add(lease.id),
      version: p.add(lease.leaseVersion),
      owner: p.add(lease.owner),
    });
    const { rowCount } = await q.query(
      `UPDATE ${this.#t} t SET lease_expires_at = ${until}${due}${more}
        WHERE ${fence} AND t.lease_expires_at > ${p.now}`,
      p.values,
    );
    return rowCount === 1 ? { ...lease, leaseExpiresAtMs: untilMs } : undefined;
  }

  /** Gives a claimed row back unworked, due at `nowMs`; false when the lease was lost. */
  async release(q: Queryable, lease: Lease<Id>, nowMs: number): Promise<boolean> {
    checkTime("nowMs", nowMs);
    const p = new Binder(nowMs);
    const set = this.#releaseSet(p);
    const fence = this.fenceSql({
      id: p.add(lease.id),
      version: p.add(lease.leaseVersion),
      owner: p.add(lease.owner),
    });
    const { rowCount } = await q.query(`UPDATE ${this.#t} t SET ${set} WHERE ${fence}`, p.values);
    return rowCount === 1;
  }

  /**
   * Gives back, due at `nowMs`, every row leased to `owner` except those in `keep` (the claims
   * it holds): the claims of a claim whose answer was lost. Fenced by the owner: a row another
   * worker claimed since is not touched. Only the owner itself may call this, between its
   * claim rounds (no claim of its own in flight). Returns how many it gave back.
   */
  async releaseOrphaned(
    q: Queryable,
    options: { owner: string; keep: readonly Id[]; nowMs: number },
  ): Promise<number> {
    checkOwner(options.owner);
    checkTime("nowMs", options.nowMs);
    this.#checkBatch(options.keep.length);
    const p = new Binder(options.nowMs);
    const set = this.#releaseSet(p);
    const owner = p.add(options.owner);
    const keep = p.add(options.keep);
    const { rowCount } = await q.query(
      `UPDATE ${this.#t} t SET ${set}
        WHERE t.lease_owner = ${owner}${this.#held} AND NOT (t.${this.#id} = ANY(${keep}::${this.#o.idType}[]))`,
      p.values,
    );
    return rowCount;
  }

  #releaseSet(p: Binder): string {
    const more = this.#o.onRelease === undefined ? "" : `, ${p.render(this.#o.onRelease)}`;
    return `${this.releaseSql()}, next_attempt_at = ${p.now}${more}`;
  }

  #checkBatch(n: number): void {
    if (n > MAX_FENCED_BATCH)
      throw new RangeError(`${this.table}: at most ${MAX_FENCED_BATCH} rows per fenced batch`);
  }
}

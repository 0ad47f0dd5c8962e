/**
 * API keys in SQL, the storage half of `@casebook/kit/api-key`: one table per system
 * (`merchant_api_keys`, `tenant_api_keys`), one row per key — its public prefix (the primary
 * key), its owner, sha256(key), when it was made and when it stops working. The key itself is
 * never stored: `issue` returns it once, for the caller to hand to the owner.
 *
 * - `apiKeyTableSql` is the table's DDL, for a system's migration (payments' 005 and webhooks'
 *   001 wrote the same table by hand; a test checks the helper still builds exactly theirs).
 * - `apiKeyUsageSql` is the upgrade every key table takes after it (`last_used_at`, `revoked_at`):
 *   a table is `apiKeyTableSql` + `apiKeyUsageSql`, in one migration or two.
 * - `ApiKeyTable` issues (a fresh prefix on the rare collision, inside the caller's
 *   transaction), authenticates (lookup by prefix, constant-time hash compare, then expiry),
 *   lists, rotates (a new key, the owner's others expiring after an overlap), expires an owner's
 *   other keys and revokes one; `register` stores a key made elsewhere (`casebook up` mints one
 *   for each caller it wires), idempotently.
 *
 * `last_used_at` is written by `authenticate`, but only when the stored value is older than
 * `touchIntervalMs` (default a minute): a key serving a thousand requests a second costs one
 * UPDATE a minute, not a thousand, and the listing is still right to the minute. The UPDATE
 * repeats the age condition, so replicas racing on one key write it once per interval too.
 * `authenticateMany` checks a batch of keys in one SELECT (and at most one UPDATE): a cache
 * re-checking many keys pays a round trip per batch (feed's key cache, through kit's GroupCommit);
 * `authenticatePresented` does the same for keys already parsed (prefix + sha256), so a cache
 * that keeps only digests can re-check its keys in the background (llm-gateway's key cache).
 *
 * Table and column names reach SQL text, so they are checked as identifiers.
 *
 * @example
 * const keys = new ApiKeyTable({ table: "merchant_api_keys", ownerColumn: "merchant_id", scheme: apiKeyScheme("sk") });
 * const issued = await db.transaction((tx) => keys.issue(tx, "mer_1", { nowMs, randomBytes }));
 * await keys.authenticate(db, issued.key, nowMs); // "mer_1"
 */
import {
  type ApiKeyScheme,
  apiKeyMatches,
  type IssuedApiKey,
  type PresentedApiKey,
  type RandomBytes,
} from "@casebook/kit/api-key";
import type { Database, Queryable } from "./sql.ts";
import { checkIdentifier } from "./sql-schema.ts";

/** Fresh prefixes tried when one is taken: 2^64 ids make even a second attempt vanishingly rare. */
export const MAX_PREFIX_ATTEMPTS = 3;
/** How stale `last_used_at` may get before an authentication writes it again: one write per key per minute. */
export const DEFAULT_LAST_USED_TOUCH_MS = 60_000;
/** A rotation keeps the old keys alive at most this long (a week, as payment providers allow). */
export const MAX_ROTATION_OVERLAP_MS = 7 * 24 * 3_600_000;

export interface ApiKeyTableNames {
  /** `merchant_api_keys`. */
  table: string;
  /** The owner's id column: `merchant_id`, `tenant_id`. */
  ownerColumn: string;
  scheme: ApiKeyScheme;
  /** The owners' table (`merchants`, `tenants`, keyed by `id`): rotate checks and locks the owner there. */
  ownerTable?: string;
  /** Default DEFAULT_LAST_USED_TOUCH_MS; 0 writes on every authentication (tests). */
  touchIntervalMs?: number;
}

export interface ApiKeyTableSqlOptions extends Omit<ApiKeyTableNames, "touchIntervalMs"> {
  /** The owners' table and its key, for the foreign key: `merchants (id)`. */
  ownerTable: string;
  /** Default `${table}_${ownerColumn}`. */
  ownerIndex?: string;
}

export interface ApiKeyInfo {
  prefix: string;
  createdAt: Date;
  /** null: valid until rotated out or revoked. */
  expiresAt: Date | null;
  /** The last authentication, to within the table's touch interval; null: never used. */
  lastUsedAt: Date | null;
  /** When it was revoked (it stopped working then); null: never revoked. */
  revokedAt: Date | null;
}

export interface RotateContext {
  nowMs: number;
  randomBytes: RandomBytes;
  /** How long the owner's other keys keep working (0..MAX_ROTATION_OVERLAP_MS): a rolling deploy's window. */
  overlapMs: number;
}

export interface RotatedApiKey extends IssuedApiKey {
  /** When the owner's previous keys stop working. */
  previousExpireAtMs: number;
}

export interface IssueContext {
  nowMs: number;
  /** Cryptographically secure in production (node:crypto `randomBytes`). */
  randomBytes: RandomBytes;
  /** Default: none (valid until rotated out or revoked). */
  expiresAtMs?: number;
}

/**
 * The CREATE TABLE (and owner index) of an API key table, for a migration.
 *
 * @example
 * migration("002_api_keys", apiKeyTableSql({ table: "owner_api_keys", ownerColumn: "owner_id",
 *   ownerTable: "owners", scheme: apiKeyScheme("ok") }));
 */
export function apiKeyTableSql(options: ApiKeyTableSqlOptions): string {
  const table = checkIdentifier(options.table);
  const owner = checkIdentifier(options.ownerColumn);
  const ownerTable = checkIdentifier(options.ownerTable);
  const index = checkIdentifier(options.ownerIndex ?? `${table}_${owner}`);
  return `CREATE TABLE ${table} (
  prefix     text        PRIMARY KEY CHECK (prefix ~ '${options.scheme.prefixRegex}'),
  ${owner} text NOT NULL REFERENCES ${ownerTable} (id),
  key_hash   char(64)    NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  created_at timestamptz NOT NULL,
  -- NULL: valid until rotated out or revoked.
  expires_at timestamptz
);
CREATE INDEX ${index} ON ${table} (${owner});
`;
}

/**
 * The columns every key table gained after its first version: when a key was last used and
 * when it was revoked. Existing keys start as never used, never revoked.
 *
 * @example
 * migration("012_api_key_usage", apiKeyUsageSql({ table: "merchant_api_keys" }));
 */
export function apiKeyUsageSql(options: { table: string }): string {
  const table = checkIdentifier(options.table);
  return `ALTER TABLE ${table}
  -- Written by authentication at most once per touch interval (api-key-table.ts), so it is not a write per request.
  ADD COLUMN last_used_at timestamptz,
  -- Set by a revocation, beside expires_at (which is what authentication checks).
  ADD COLUMN revoked_at timestamptz;
`;
}

/** A key's row as authentication reads it. */
interface KeyRow {
  prefix: string;
  owner: string;
  key_hash: string;
  expires_at: Date | null;
  last_used_at: Date | null;
}

/** Issue, authenticate, list, rotate, expire and revoke the keys of one table; see the module comment. */
export class ApiKeyTable {
  readonly scheme: ApiKeyScheme;
  readonly touchIntervalMs: number;
  readonly #table: string;
  readonly #owner: string;
  readonly #ownerTable: string | undefined;

  constructor(names: ApiKeyTableNames) {
    this.scheme = names.scheme;
    this.#table = checkIdentifier(names.table);
    this.#owner = checkIdentifier(names.ownerColumn);
    this.#ownerTable = names.ownerTable === undefined ? undefined : checkIdentifier(names.ownerTable);
    const touch = names.touchIntervalMs ?? DEFAULT_LAST_USED_TOUCH_MS;
    if (!Number.isInteger(touch) || touch < 0)
      throw new RangeError(`touchIntervalMs ${touch} must be an integer >= 0`);
    this.touchIntervalMs = touch;
  }

  /**
   * A fresh key for `ownerId`, inserted with `q` (the caller's transaction, so the key commits
   * with the owner it belongs to). The returned `key` is the only copy: hand it over now.
   */
  async issue(q: Queryable, ownerId: string, ctx: IssueContext): Promise<IssuedApiKey> {
    const expiresAt = ctx.expiresAtMs === undefined ? null : new Date(ctx.expiresAtMs);
    for (let attempt = 1; attempt <= MAX_PREFIX_ATTEMPTS; attempt++) {
      const issued = this.scheme.issue(ctx.randomBytes);
      // DO NOTHING instead of catching 23505: a unique violation would abort the caller's transaction.
      const { rowCount } = await q.query(
        `INSERT INTO ${this.#table} (prefix, ${this.#owner}, key_hash, created_at, expires_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (prefix) DO NOTHING`,
        [issued.prefix, ownerId, issued.hash, new Date(ctx.nowMs), expiresAt],
      );
      if (rowCount === 1) return issued;
    }
    throw new Error(`api key: ${MAX_PREFIX_ATTEMPTS} random prefixes were all taken; is randomBytes random?`);
  }

  /**
   * Stores `key`, made elsewhere, for `ownerId` (only its prefix and hash, as for an issued key).
   * Registering the same key for the same owner again is a no-op — a restart with the same
   * settings — and leaves its expiry alone; a key of another kind, or whose prefix already
   * belongs to another owner or secret, is refused (RangeError). Run it in the owner's
   * transaction: the owner must exist.
   */
  async register(q: Queryable, ownerId: string, key: string, nowMs: number): Promise<void> {
    const presented = this.scheme.parse(key);
    if (presented === undefined) throw new RangeError(`the key is not a ${this.scheme.kind}_… key`);
    await q.query(
      `INSERT INTO ${this.#table} (prefix, ${this.#owner}, key_hash, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (prefix) DO NOTHING`,
      [presented.prefix, ownerId, presented.hash, new Date(nowMs)],
    );
    const { rows } = await q.query<{ owner: string; key_hash: string }>(
      `SELECT ${this.#owner} AS owner, key_hash FROM ${this.#table} WHERE prefix = $1`,
      [presented.prefix],
    );
    if (rows[0]?.owner !== ownerId || !apiKeyMatches(presented.hash, rows[0].key_hash))
      throw new RangeError(`key ${presented.prefix} is already registered for another owner or secret`);
  }

  /** The owner a presented key belongs to, or undefined (malformed, unknown, wrong secret, expired). */
  async authenticate(q: Queryable, key: string, nowMs: number): Promise<string | undefined> {
    const [owner] = await this.authenticateMany(q, [key], nowMs);
    return owner;
  }

  /**
   * `authenticate` for many keys at once: one SELECT for all of them and at most one UPDATE of
   * `last_used_at` — a cache re-checking thousands of keys a second pays one round trip per
   * batch, not per key. One answer per key, in order, as `authenticate` would give it.
   */
  async authenticateMany(
    q: Queryable,
    keys: readonly string[],
    nowMs: number,
  ): Promise<(string | undefined)[]> {
    return this.authenticatePresented(
      q,
      keys.map((key) => this.scheme.parse(key)),
      nowMs,
    );
  }

  /**
   * `authenticateMany` for keys already parsed (`scheme.parse`: the public prefix and sha256 of
   * the key — what the table stores, not a usable secret): a cache that keeps only the digest
   * re-checks a key in the background without holding the key itself. Undefined = malformed.
   */
  async authenticatePresented(
    q: Queryable,
    presented: readonly (PresentedApiKey | undefined)[],
    nowMs: number,
  ): Promise<(string | undefined)[]> {
    const prefixes = [...new Set(presented.flatMap((p) => (p ? [p.prefix] : [])))];
    if (prefixes.length === 0) return presented.map(() => undefined);
    const { rows } = await q.query<KeyRow>(
      `SELECT prefix, ${this.#owner} AS owner, key_hash, expires_at, last_used_at FROM ${this.#table}
        WHERE prefix = ANY($1::text[])`,
      [prefixes],
    );
    const byPrefix = new Map(rows.map((row) => [row.prefix, row]));
    const due = new Set<string>();
    const owners = presented.map((p) => {
      const row = p && byPrefix.get(p.prefix);
      const owner = p && this.#ownerOf(p.hash, row, nowMs);
      if (owner !== undefined && this.#touchDue(row!, nowMs)) due.add(p!.prefix);
      return owner;
    });
    if (due.size > 0) await this.#touch(q, [...due], nowMs);
    return owners;
  }

  /** The row's owner when the presented hash matches and the key has not expired. */
  #ownerOf(presentedHash: string, row: KeyRow | undefined, nowMs: number): string | undefined {
    // The hash compare runs before the expiry check, so both failures take the same path and time.
    if (!row || !apiKeyMatches(presentedHash, row.key_hash)) return undefined;
    if (row.expires_at !== null && row.expires_at.getTime() <= nowMs) return undefined;
    return row.owner;
  }

  #touchDue(row: KeyRow, nowMs: number): boolean {
    return row.last_used_at === null || row.last_used_at.getTime() <= nowMs - this.touchIntervalMs;
  }

  /** last_used_at = now, unless another request (or replica) wrote it within the interval already. */
  async #touch(q: Queryable, prefixes: readonly string[], nowMs: number): Promise<void> {
    await q.query(
      `UPDATE ${this.#table} SET last_used_at = $2
        WHERE prefix = ANY($1::text[]) AND (last_used_at IS NULL OR last_used_at <= $3)`,
      [prefixes, new Date(nowMs), new Date(nowMs - this.touchIntervalMs)],
    );
  }

  /** The owner's keys, newest first (prefixes only: the keys themselves are not stored). */
  async list(q: Queryable, ownerId: string): Promise<ApiKeyInfo[]> {
    const { rows } = await q.query<{
      prefix: string;
      created_at: Date;
      expires_at: Date | null;
      last_used_at: Date | null;
      revoked_at: Date | null;
    }>(
      `SELECT prefix, created_at, expires_at, last_used_at, revoked_at FROM ${this.#table}
        WHERE ${this.#owner} = $1 ORDER BY created_at DESC, prefix`,
      [ownerId],
    );
    return rows.map((row) => ({
      prefix: row.prefix,
      createdAt: row.created_at,
      expiresAt: row.expires_at,
      lastUsedAt: row.last_used_at,
      revokedAt: row.revoked_at,
    }));
  }

  /** Whether the owner exists (needs `ownerTable`); `forUpdate` locks its row for the caller's transaction. */
  async ownerExists(q: Queryable, ownerId: string, forUpdate = false): Promise<boolean> {
    if (this.#ownerTable === undefined) throw new Error(`api key table ${this.#table}: no ownerTable given`);
    const { rowCount } = await q.query(
      `SELECT 1 FROM ${this.#ownerTable} WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
      [ownerId],
    );
    return rowCount === 1;
  }

  /**
   * Rotation with overlap, in one transaction holding the owner's row (two rotations queue
   * instead of leaving two "newest" keys): a new key, live now, and every other live key of
   * the owner expiring `overlapMs` from now. Undefined when there is no such owner.
   */
  async rotate(db: Database, ownerId: string, ctx: RotateContext): Promise<RotatedApiKey | undefined> {
    if (!Number.isInteger(ctx.overlapMs) || ctx.overlapMs < 0 || ctx.overlapMs > MAX_ROTATION_OVERLAP_MS) {
      throw new RangeError(`overlapMs ${ctx.overlapMs} must be an integer in 0..${MAX_ROTATION_OVERLAP_MS}`);
    }
    return db.transaction(async (tx) => {
      if (!(await this.ownerExists(tx, ownerId, true))) return undefined;
      const previousExpireAtMs = ctx.nowMs + ctx.overlapMs;
      await this.expireAll(tx, ownerId, previousExpireAtMs);
      const issued = await this.issue(tx, ownerId, { nowMs: ctx.nowMs, randomBytes: ctx.randomBytes });
      return { ...issued, previousExpireAtMs };
    });
  }

  /**
   * Every live key of the owner stops working at `atMs` (rotation: now, or after an overlap);
   * a key already expiring sooner keeps its earlier expiry. Returns how many changed.
   */
  async expireAll(q: Queryable, ownerId: string, atMs: number): Promise<number> {
    const { rowCount } = await q.query(
      `UPDATE ${this.#table} SET expires_at = $2
        WHERE ${this.#owner} = $1 AND (expires_at IS NULL OR expires_at > $2)`,
      [ownerId, new Date(atMs)],
    );
    return rowCount;
  }

  /** The key with `prefix` stops working at `nowMs`; false when the owner has no such live key. */
  async revoke(q: Queryable, ownerId: string, prefix: string, nowMs: number): Promise<boolean> {
    const { rowCount } = await q.query(
      `UPDATE ${this.#table} SET expires_at = $3, revoked_at = $3
        WHERE ${this.#owner} = $1 AND prefix = $2 AND (expires_at IS NULL OR expires_at > $3)`,
      [ownerId, prefix, new Date(nowMs)],
    );
    return rowCount === 1;
  }
}

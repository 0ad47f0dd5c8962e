/**
 * Merchants and their API keys (schema: migrations/005_merchants.sql). A key (`sk_…`) is shown
 * once, when it is issued; only its sha256 and its public prefix are stored. The key format is
 * @casebook/kit/api-key and the key table @casebook/infra/sql/api-key-table: authentication finds
 * the row by prefix and compares hashes in constant time.
 *
 * Rotation issues a new key and gives every other live key of the merchant an expiry: now,
 * or now + `overlapMs` so a rolling deploy can switch keys without a window of 401s. Both
 * happen in one transaction holding the merchant row, so two rotations queue instead of
 * leaving two "newest" keys.
 *
 * @example
 * const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
 * const { merchant, apiKey } = await merchants.create({ name: "Acme" });
 * await merchants.authenticate(apiKey.key); // merchant.id
 * const next = await merchants.rotateKey(merchant.id, { overlapMs: 60_000 });
 * await merchants.ensureWithKey({ id: "flash-sale", name: "flash-sale (caller)", key: "sk_…" });
 */
import { type ApiKeyInfo, ApiKeyTable } from "@casebook/infra/sql/api-key-table";
import type { Database } from "@casebook/infra/sql/sql";
import {
  apiKeyScheme,
  type IssuedApiKey,
  type PresentedApiKey,
  type RandomBytes,
} from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import { merchantErrors } from "../errors.ts";

export type { ApiKeyInfo };

/** Same rule as the table's CHECK and the acquirer's merchantId: no ':' (it separates acquirer keys). */
export const MERCHANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_MERCHANT_NAME_CHARS = 200;
/** A rotation may keep the old keys alive at most this long (a week, as payment providers allow). */
export const MAX_KEY_OVERLAP_MS = 7 * 24 * 3_600_000;
/** Merchant keys: `sk_<16 hex>_<43 base64url>`, the format 005_merchants.sql checks. */
export const merchantKeys = new ApiKeyTable({
  table: "merchant_api_keys",
  ownerColumn: "merchant_id",
  ownerTable: "merchants",
  scheme: apiKeyScheme("sk"),
});

export interface Merchant {
  id: string;
  name: string;
  createdAt: Date;
}

export interface CreateMerchantRequest {
  /** Default: `mer_` + 24 random hex characters. */
  id?: string;
  name: string;
}

export interface CreatedMerchant {
  merchant: Merchant;
  /** Shown once: the caller must hand `apiKey.key` to the merchant now. */
  apiKey: IssuedApiKey;
}

export interface MerchantRepositoryOptions {
  clock: Clock;
  /** Cryptographically secure in production (node:crypto `randomBytes`). */
  randomBytes: RandomBytes;
}

interface MerchantRow {
  id: string;
  name: string;
  created_at: Date;
}

function toMerchant(row: MerchantRow): Merchant {
  return { id: row.id, name: row.name, createdAt: row.created_at };
}

function checkMerchantId(id: unknown): string {
  if (typeof id !== "string" || !MERCHANT_ID_PATTERN.test(id)) {
    throw merchantErrors.create("PAYMENTS_MERCHANT_INVALID", { fields: { field: "id" } });
  }
  return id;
}

function checkName(name: unknown): string {
  if (typeof name !== "string" || name.trim() === "" || name.length > MAX_MERCHANT_NAME_CHARS) {
    throw merchantErrors.create("PAYMENTS_MERCHANT_INVALID", { fields: { field: "name" } });
  }
  return name;
}

/** Merchants, API keys, authentication; see the module comment. */
export class MerchantRepository {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #randomBytes: RandomBytes;

  constructor(db: Database, options: MerchantRepositoryOptions) {
    this.#db = db;
    this.#clock = options.clock;
    this.#randomBytes = options.randomBytes;
  }

  /** A merchant and its first key, in one transaction. PAYMENTS_MERCHANT_EXISTS when the id is taken. */
  async create(request: CreateMerchantRequest): Promise<CreatedMerchant> {
    const created = await this.createIfAbsent(request);
    if (!created) throw merchantErrors.create("PAYMENTS_MERCHANT_EXISTS", { fields: { id: request.id } });
    return created;
  }

  /** Like `create`, but undefined when the id is taken (two replicas bootstrapping at once both succeed). */
  async createIfAbsent(request: CreateMerchantRequest): Promise<CreatedMerchant | undefined> {
    const id = checkMerchantId(request.id ?? `mer_${Buffer.from(this.#randomBytes(12)).toString("hex")}`);
    const name = checkName(request.name);
    const now = new Date(this.#clock.nowMs());
    return this.#db.transaction(async (tx) => {
      // ON CONFLICT: the PRIMARY KEY decides who created it, never a check-then-insert.
      const { rows } = await tx.query<MerchantRow>(
        `INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (id) DO NOTHING RETURNING id, name, created_at`,
        [id, name, now],
      );
      if (!rows[0]) return undefined;
      const apiKey = await merchantKeys.issue(tx, id, {
        nowMs: now.getTime(),
        randomBytes: this.#randomBytes,
      });
      return { merchant: toMerchant(rows[0]), apiKey };
    });
  }

  /**
   * A merchant made at start for a key given to it (`casebook up` grants one to each system that
   * calls payments): created when absent, with no key of its own, and `key` registered for it.
   * Idempotent across restarts and replicas; a key already registered for another merchant is
   * refused (RangeError).
   */
  async ensureWithKey(request: { id: string; name: string; key: string }): Promise<void> {
    const id = checkMerchantId(request.id);
    const name = checkName(request.name);
    const now = new Date(this.#clock.nowMs());
    await this.#db.transaction(async (tx) => {
      await tx.query(
        "INSERT INTO merchants (id, name, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
        [id, name, now],
      );
      await merchantKeys.register(tx, id, request.key, now.getTime());
    });
  }

  async get(merchantId: string): Promise<Merchant | undefined> {
    const { rows } = await this.#db.query<MerchantRow>(
      "SELECT id, name, created_at FROM merchants WHERE id = $1",
      [merchantId],
    );
    return rows[0] ? toMerchant(rows[0]) : undefined;
  }

  /** Whether any merchant exists: a start on an empty database says how to make the first one. */
  async any(): Promise<boolean> {
    const { rowCount } = await this.#db.query("SELECT 1 FROM merchants LIMIT 1");
    return rowCount > 0;
  }

  /** The merchant's keys, newest first (prefixes only: the keys themselves are not stored). */
  async keys(merchantId: string): Promise<ApiKeyInfo[]> {
    return merchantKeys.list(this.#db, merchantId);
  }

  /**
   * Issues a new key; every other live key expires now, or after `overlapMs` (≤ MAX_KEY_OVERLAP_MS).
   * A key already expiring sooner keeps its earlier expiry.
   */
  async rotateKey(merchantId: string, options: { overlapMs?: number } = {}): Promise<IssuedApiKey> {
    const overlapMs = options.overlapMs ?? 0;
    if (!Number.isInteger(overlapMs) || overlapMs < 0 || overlapMs > MAX_KEY_OVERLAP_MS) {
      throw merchantErrors.create("PAYMENTS_MERCHANT_INVALID", { fields: { field: "overlapMs" } });
    }
    const nowMs = this.#clock.nowMs();
    return this.#db.transaction(async (tx) => {
      const locked = await tx.query("SELECT 1 FROM merchants WHERE id = $1 FOR UPDATE", [merchantId]);
      if (locked.rowCount === 0) {
        throw merchantErrors.create("PAYMENTS_MERCHANT_NOT_FOUND", { fields: { id: merchantId } });
      }
      await merchantKeys.expireAll(tx, merchantId, nowMs + overlapMs);
      return merchantKeys.issue(tx, merchantId, { nowMs, randomBytes: this.#randomBytes });
    });
  }

  /** The merchant a presented key belongs to, or undefined (malformed, unknown, wrong secret, expired). */
  async authenticate(key: string): Promise<string | undefined> {
    return merchantKeys.authenticate(this.#db, key, this.#clock.nowMs());
  }

  /** `authenticate` of keys already parsed (`merchantKeys.scheme.parse`), many in one query: the API's key cache re-checks with it. */
  async authenticatePresented(
    presented: readonly (PresentedApiKey | undefined)[],
  ): Promise<(string | undefined)[]> {
    return merchantKeys.authenticatePresented(this.#db, presented, this.#clock.nowMs());
  }
}

/**
 * Tenants and their API keys (schema: migrations/001_tenants.sql). A tenant carries its
 * fair-scheduling weight and its retention settings; a key (`whk_…`) is shown once, when
 * issued, and only its sha256 and public prefix are stored (the format is
 * @casebook/kit/api-key, the key table @casebook/infra/sql/api-key-table).
 *
 * @example
 * const { tenant, apiKey } = await createTenant(db, { name: "Acme" }, { nowMs, randomBytes });
 * await authenticateTenant(db, apiKey.key, nowMs); // tenant.id
 * await ensureTenantWithKey(db, { id: "payments", name: "payments (caller)" }, "whk_…", { nowMs, randomBytes });
 */
import { ApiKeyTable } from "@casebook/infra/sql/api-key-table";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { apiKeyScheme, type IssuedApiKey } from "@casebook/kit/api-key";
import { newId, type RandomBytes } from "../domain/store-ids.ts";
import { storeErrors } from "../errors.ts";

export const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_TENANT_NAME_CHARS = 200;
export const MAX_TENANT_WEIGHT = 1_000;
/** WH-02: the retry window is configurable, at most 24 h. */
export const MAX_DELIVERY_WINDOW_S = 86_400;
export const DEFAULT_DELIVERY_WINDOW_S = 86_400;
export const MAX_PAYLOAD_RETENTION_S = 7 * 86_400;
export const DEFAULT_PAYLOAD_RETENTION_S = 86_400;
export const MIN_ATTEMPT_RETENTION_S = 3_600;
export const MAX_ATTEMPT_RETENTION_S = 365 * 86_400;
export const DEFAULT_ATTEMPT_RETENTION_S = 30 * 86_400;
/** Tenant keys: `whk_<16 hex>_<43 base64url>`, the format 001_tenants.sql checks. */
export const tenantKeys = new ApiKeyTable({
  table: "tenant_api_keys",
  ownerColumn: "tenant_id",
  ownerTable: "tenants",
  scheme: apiKeyScheme("whk"),
});

export interface Tenant {
  id: string;
  name: string;
  weight: number;
  deliveryWindowS: number;
  payloadRetentionS: number;
  attemptRetentionS: number;
  createdAt: Date;
}

export interface NewTenant {
  /** Default `ten_<32 hex>`. */
  id?: string;
  name: string;
  weight?: number;
  deliveryWindowS?: number;
  payloadRetentionS?: number;
  attemptRetentionS?: number;
}

/** Time and randomness of a write, injected so tests are deterministic. */
export interface WriteContext {
  nowMs: number;
  /** Cryptographically secure in production (node:crypto `randomBytes`). */
  randomBytes: RandomBytes;
}

interface TenantRow {
  id: string;
  name: string;
  weight: number;
  delivery_window_s: number;
  payload_retention_s: number;
  attempt_retention_s: number;
  created_at: Date;
}

function toTenant(row: TenantRow): Tenant {
  return {
    id: row.id,
    name: row.name,
    weight: row.weight,
    deliveryWindowS: row.delivery_window_s,
    payloadRetentionS: row.payload_retention_s,
    attemptRetentionS: row.attempt_retention_s,
    createdAt: row.created_at,
  };
}

function invalid(field: string): Error {
  return storeErrors.create("WEBHOOK_TENANT_INVALID", { fields: { field } });
}

function intIn(field: string, value: number | undefined, fallback: number, min: number, max: number): number {
  const n = value ?? fallback;
  if (!Number.isInteger(n) || n < min || n > max) throw invalid(field);
  return n;
}

function checkTenant(input: NewTenant, randomBytes: RandomBytes): Omit<TenantRow, "created_at"> {
  const id = input.id ?? newId("ten", randomBytes);
  if (typeof id !== "string" || !TENANT_ID_PATTERN.test(id)) throw invalid("id");
  const name = input.name;
  if (typeof name !== "string" || name.trim() === "" || name.length > MAX_TENANT_NAME_CHARS)
    throw invalid("name");
  const window = intIn(
    "deliveryWindowS",
    input.deliveryWindowS,
    DEFAULT_DELIVERY_WINDOW_S,
    1,
    MAX_DELIVERY_WINDOW_S,
  );
  const retention = intIn(
    "payloadRetentionS",
    input.payloadRetentionS,
    Math.max(DEFAULT_PAYLOAD_RETENTION_S, window),
    window,
    MAX_PAYLOAD_RETENTION_S,
  );
  return {
    id,
    name,
    weight: intIn("weight", input.weight, 1, 1, MAX_TENANT_WEIGHT),
    delivery_window_s: window,
    payload_retention_s: retention,
    attempt_retention_s: intIn(
      "attemptRetentionS",
      input.attemptRetentionS,
      DEFAULT_ATTEMPT_RETENTION_S,
      MIN_ATTEMPT_RETENTION_S,
      MAX_ATTEMPT_RETENTION_S,
    ),
  };
}

/**
 * Creates a tenant and its first API key in one transaction. The key is returned once:
 * hand `apiKey.key` to the tenant now. WEBHOOK_TENANT_INVALID names a bad field; an id
 * already taken is WEBHOOK_TENANT_INVALID on `id` too (ids are never reassigned).
 */
export async function createTenant(
  db: Database,
  input: NewTenant,
  ctx: WriteContext,
): Promise<{ tenant: Tenant; apiKey: IssuedApiKey }> {
  const t = checkTenant(input, ctx.randomBytes);
  const now = new Date(ctx.nowMs);
  return db.transaction(async (tx) => {
    // ON CONFLICT: the PRIMARY KEY decides, never a check-then-insert.
    const { rows } = await tx.query<TenantRow>(
      `INSERT INTO tenants (id, name, weight, delivery_window_s, payload_retention_s, attempt_retention_s, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING RETURNING *`,
      [t.id, t.name, t.weight, t.delivery_window_s, t.payload_retention_s, t.attempt_retention_s, now],
    );
    if (!rows[0]) throw invalid("id");
    const apiKey = await tenantKeys.issue(tx, t.id, { nowMs: ctx.nowMs, randomBytes: ctx.randomBytes });
    return { tenant: toTenant(rows[0]), apiKey };
  });
}

/**
 * A tenant made at start for a key given to it (`casebook up` grants one to each system that
 * publishes to webhooks): created when absent, with no key of its own, and `key` registered for
 * it. Idempotent across restarts and replicas; a key already registered for another tenant is
 * refused (RangeError).
 */
export async function ensureTenantWithKey(db: Database, input: NewTenant, key: string, ctx: WriteContext) {
  const t = checkTenant(input, ctx.randomBytes);
  await db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO tenants (id, name, weight, delivery_window_s, payload_retention_s, attempt_retention_s, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
      [
        t.id,
        t.name,
        t.weight,
        t.delivery_window_s,
        t.payload_retention_s,
        t.attempt_retention_s,
        new Date(ctx.nowMs),
      ],
    );
    await tenantKeys.register(tx, t.id, key, ctx.nowMs);
  });
}

export async function getTenant(q: Queryable, tenantId: string): Promise<Tenant | undefined> {
  const { rows } = await q.query<TenantRow>("SELECT * FROM tenants WHERE id = $1", [tenantId]);
  return rows[0] ? toTenant(rows[0]) : undefined;
}

/** Whether any tenant exists: a start on an empty database says how to make the first one. */
export async function anyTenant(q: Queryable): Promise<boolean> {
  const { rowCount } = await q.query("SELECT 1 FROM tenants LIMIT 1");
  return rowCount > 0;
}

/** Changes a tenant's scheduling weight (1..MAX_TENANT_WEIGHT); false when there is no such tenant. */
export async function setTenantWeight(q: Queryable, tenantId: string, weight: number): Promise<boolean> {
  const checked = intIn("weight", weight, 1, 1, MAX_TENANT_WEIGHT);
  const { rowCount } = await q.query("UPDATE tenants SET weight = $2 WHERE id = $1", [tenantId, checked]);
  return rowCount === 1;
}

/** Issues another key for the tenant (rotation: issue, deploy, then revoke the old prefix). */
export async function issueApiKey(
  db: Database,
  tenantId: string,
  ctx: WriteContext & { expiresAtMs?: number },
): Promise<IssuedApiKey> {
  return db.transaction(async (tx) => {
    const found = await tx.query("SELECT 1 FROM tenants WHERE id = $1", [tenantId]);
    if (found.rowCount === 0) throw storeErrors.create("WEBHOOK_TENANT_NOT_FOUND", { fields: { tenantId } });
    return tenantKeys.issue(tx, tenantId, ctx);
  });
}

/** Makes the key with `prefix` invalid from `nowMs` on; false when the tenant has no such live key. */
export async function revokeApiKey(
  q: Queryable,
  tenantId: string,
  prefix: string,
  nowMs: number,
): Promise<boolean> {
  return tenantKeys.revoke(q, tenantId, prefix, nowMs);
}

/** The tenant a presented key belongs to, or undefined (malformed, unknown, wrong secret, expired). */
export async function authenticateTenant(
  q: Queryable,
  key: string,
  nowMs: number,
): Promise<string | undefined> {
  return tenantKeys.authenticate(q, key, nowMs);
}

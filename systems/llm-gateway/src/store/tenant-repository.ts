/**
 * Tenants, their quotas and their API keys (LG-14's key and quota table): a tenant is created with its first key in
 * one transaction, the key shown once; a request's bearer key resolves to its tenant through
 * infra's `ApiKeyTable` (lookup by public prefix, constant-time hash compare, expiry).
 *
 * @example
 * const tenants = new TenantRepository(db, { clock, randomBytes });
 * const created = await tenants.createIfAbsent({ id: "acme", name: "Acme", rpm: 600, tpm: 200_000 });
 * await tenants.authenticate(created.apiKey.key); // { id: "acme", rpm: 600, tpm: 200000 }
 */
import { ApiKeyTable } from "@casebook/infra/sql/api-key-table";
import type { Database } from "@casebook/infra/sql/sql";
import {
  apiKeyScheme,
  type IssuedApiKey,
  type PresentedApiKey,
  type RandomBytes,
} from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import type { TenantLimits } from "../domain/budget-plan.ts";

/** The table's CHECK. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Tenant keys: `llm_<16 hex>_<43 base64url>`, the format 001_tenants.sql checks. */
export const tenantKeys = new ApiKeyTable({
  table: "tenant_api_keys",
  ownerColumn: "tenant_id",
  ownerTable: "tenants",
  scheme: apiKeyScheme("llm"),
});

export interface CreatedTenant {
  readonly tenant: { id: string; name: string };
  /** Shown once: the caller hands `apiKey.key` to the tenant now. */
  readonly apiKey: IssuedApiKey;
}

/** A tenant's name and the settings its requests are served by. */
export interface TenantSettings extends TenantLimits {
  readonly name: string;
}

/** What an update may change; absent = kept; `spendLimitNanoUsd: null` = no money budget. */
export interface TenantChange {
  readonly name?: string | undefined;
  readonly rpm?: number | undefined;
  readonly tpm?: number | undefined;
  readonly spendLimitNanoUsd?: number | null | undefined;
  readonly acceptsModelFallback?: boolean | undefined;
}

const TENANT_COLUMNS = "id, name, rpm, tpm, spend_limit_nano_usd, accepts_model_fallback";

interface TenantRow {
  id: string;
  name: string;
  rpm: number;
  tpm: string | number;
  spend_limit_nano_usd: string | number | null;
  accepts_model_fallback: boolean;
}

function limitsOf(row: TenantRow): TenantLimits {
  const spend = row.spend_limit_nano_usd;
  return {
    id: row.id,
    rpm: Number(row.rpm),
    tpm: Number(row.tpm),
    spendLimitNanoUsd: spend === null ? undefined : Number(spend),
    acceptsModelFallback: row.accepts_model_fallback,
  };
}

function settingsOf(row: TenantRow): TenantSettings {
  return { ...limitsOf(row), name: row.name };
}

export class TenantRepository {
  readonly #db: Database;
  readonly #clock: Clock;
  readonly #randomBytes: RandomBytes;

  constructor(db: Database, options: { clock: Clock; randomBytes: RandomBytes }) {
    this.#db = db;
    this.#clock = options.clock;
    this.#randomBytes = options.randomBytes;
  }

  /** The tenant and its first key, or undefined when the id is taken (replicas bootstrapping at once). */
  async createIfAbsent(request: {
    id: string;
    name: string;
    rpm: number;
    tpm: number;
    spendLimitNanoUsd?: number | undefined;
    acceptsModelFallback?: boolean | undefined;
  }): Promise<CreatedTenant | undefined> {
    if (!TENANT_ID_PATTERN.test(request.id)) throw new RangeError(`tenant id ${request.id} is not valid`);
    const now = new Date(this.#clock.nowMs());
    return this.#db.transaction(async (tx) => {
      // ON CONFLICT: the PRIMARY KEY decides who created it, never a check-then-insert.
      const { rows } = await tx.query<{ id: string; name: string }>(
        `INSERT INTO tenants (id, name, created_at, rpm, tpm, spend_limit_nano_usd, accepts_model_fallback)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (id) DO NOTHING RETURNING id, name`,
        [
          request.id,
          request.name,
          now,
          request.rpm,
          request.tpm,
          request.spendLimitNanoUsd ?? null,
          request.acceptsModelFallback ?? true,
        ],
      );
      const tenant = rows[0];
      if (tenant === undefined) return undefined;
      const apiKey = await tenantKeys.issue(tx, tenant.id, {
        nowMs: now.getTime(),
        randomBytes: this.#randomBytes,
      });
      return { tenant, apiKey };
    });
  }

  async any(): Promise<boolean> {
    const { rows } = await this.#db.query("SELECT 1 FROM tenants LIMIT 1");
    return rows.length > 0;
  }

  /** The tenant a key belongs to, with its quota, or undefined (malformed, unknown, wrong, expired, revoked). */
  async authenticate(key: string): Promise<TenantLimits | undefined> {
    const [tenant] = await this.authenticatePresented([tenantKeys.scheme.parse(key)]);
    return tenant;
  }

  /**
   * `authenticate` for keys already parsed (prefix + sha256: what the key cache keeps, never
   * the key), many at once: one SELECT of the keys (at most one touch), one of their tenants.
   * One answer per key, in order; undefined = malformed.
   */
  async authenticatePresented(
    presented: readonly (PresentedApiKey | undefined)[],
  ): Promise<(TenantLimits | undefined)[]> {
    const owners = await tenantKeys.authenticatePresented(this.#db, presented, this.#clock.nowMs());
    const ids = [...new Set(owners.filter((id) => id !== undefined))];
    if (ids.length === 0) return owners.map(() => undefined);
    const { rows } = await this.#db.query<TenantRow>(
      `SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = ANY($1::text[])`,
      [ids],
    );
    const byId = new Map(rows.map((row): [string, TenantLimits] => [row.id, limitsOf(row)]));
    return owners.map((id) => (id === undefined ? undefined : byId.get(id)));
  }

  /** The tenant's name and settings, or undefined when there is none with this id. */
  async find(id: string): Promise<TenantSettings | undefined> {
    const { rows } = await this.#db.query<TenantRow>(`SELECT ${TENANT_COLUMNS} FROM tenants WHERE id = $1`, [
      id,
    ]);
    return rows[0] && settingsOf(rows[0]);
  }

  /**
   * Changes the given settings of a tenant in one statement (the others are kept; a spend limit
   * of null removes the money budget); undefined when there is no such tenant. Replicas serving
   * the tenant from their key cache see the change within its TTL (LG-14).
   */
  async update(id: string, change: TenantChange): Promise<TenantSettings | undefined> {
    const { rows } = await this.#db.query<TenantRow>(
      `UPDATE tenants SET
         name = coalesce($2::text, name),
         rpm = coalesce($3::int4, rpm),
         tpm = coalesce($4::int8, tpm),
         spend_limit_nano_usd = CASE WHEN $5::boolean THEN $6::int8 ELSE spend_limit_nano_usd END,
         accepts_model_fallback = coalesce($7::boolean, accepts_model_fallback)
       WHERE id = $1
       RETURNING ${TENANT_COLUMNS}`,
      [
        id,
        change.name ?? null,
        change.rpm ?? null,
        change.tpm ?? null,
        change.spendLimitNanoUsd !== undefined,
        change.spendLimitNanoUsd ?? null,
        change.acceptsModelFallback ?? null,
      ],
    );
    return rows[0] && settingsOf(rows[0]);
  }
}

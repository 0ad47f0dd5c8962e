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
import { apiKeyScheme, type IssuedApiKey, type RandomBytes } from "@casebook/kit/api-key";
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
  }): Promise<CreatedTenant | undefined> {
    if (!TENANT_ID_PATTERN.test(request.id)) throw new RangeError(`tenant id ${request.id} is not valid`);
    const now = new Date(this.#clock.nowMs());
    return this.#db.transaction(async (tx) => {
      // ON CONFLICT: the PRIMARY KEY decides who created it, never a check-then-insert.
      const { rows } = await tx.query<{ id: string; name: string }>(
        `INSERT INTO tenants (id, name, created_at, rpm, tpm, spend_limit_nano_usd) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (id) DO NOTHING RETURNING id, name`,
        [request.id, request.name, now, request.rpm, request.tpm, request.spendLimitNanoUsd ?? null],
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
    const id = await tenantKeys.authenticate(this.#db, key, this.#clock.nowMs());
    if (id === undefined) return undefined;
    const { rows } = await this.#db.query<{
      rpm: number;
      tpm: string | number;
      spend_limit_nano_usd: string | number | null;
    }>("SELECT rpm, tpm, spend_limit_nano_usd FROM tenants WHERE id = $1", [id]);
    const row = rows[0];
    if (row === undefined) return undefined;
    const spend = row.spend_limit_nano_usd;
    return {
      id,
      rpm: Number(row.rpm),
      tpm: Number(row.tpm),
      spendLimitNanoUsd: spend === null ? undefined : Number(spend),
    };
  }
}

/**
 * Tenants and their API keys: a tenant is created with its first key in one transaction (the
 * key shown once); a request's bearer key resolves to its tenant through infra's
 * `ApiKeyTable` (lookup by public prefix, constant-time hash compare, expiry). The ingest and
 * the query API both scope everything to that tenant.
 *
 * @example
 * const tenants = new TenantRepository(db, { clock, randomBytes });
 * const created = await tenants.createIfAbsent({ id: "acme", name: "Acme" });
 * await tenants.authenticate(created!.apiKey.key); // { id: "acme", maxSeries: undefined, maxSeriesPerMetric: undefined }
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

export const TENANT_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** Tenant keys: `mtk_<16 hex>_<43 base64url>`, the format 001_tenants.sql checks. */
export const tenantKeys = new ApiKeyTable({
  table: "tenant_api_keys",
  ownerColumn: "tenant_id",
  ownerTable: "tenants",
  scheme: apiKeyScheme("mtk"),
});

export interface Tenant {
  readonly id: string;
  /** The tenant's own ceilings (MT-16), or undefined for the deployment's defaults. */
  readonly maxSeries: number | undefined;
  readonly maxSeriesPerMetric: number | undefined;
}

interface TenantRow {
  id: string;
  max_series: number | null;
  max_series_per_metric: number | null;
}

function tenantOf(row: TenantRow): Tenant {
  return {
    id: row.id,
    maxSeries: row.max_series ?? undefined,
    maxSeriesPerMetric: row.max_series_per_metric ?? undefined,
  };
}

export interface CreatedTenant {
  readonly tenant: { id: string; name: string };
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

  /** The tenant and its first key, or undefined when the id is taken. */
  async createIfAbsent(request: {
    id: string;
    name: string;
    maxSeries?: number | undefined;
    maxSeriesPerMetric?: number | undefined;
  }): Promise<CreatedTenant | undefined> {
    if (!TENANT_ID_PATTERN.test(request.id)) throw new RangeError(`tenant id ${request.id} is not valid`);
    const now = new Date(this.#clock.nowMs());
    return this.#db.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: string; name: string }>(
        `INSERT INTO tenants (id, name, created_at, max_series, max_series_per_metric) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (id) DO NOTHING RETURNING id, name`,
        [request.id, request.name, now, request.maxSeries ?? null, request.maxSeriesPerMetric ?? null],
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

  /**
   * The scrape tenant at start: created when absent (with no key of its own), and `key` — one
   * made elsewhere (`casebook up` makes one for the console) — registered for it: only its
   * prefix and hash are stored, as for an issued key. Registering the same key again is a no-op;
   * a key whose prefix already belongs to another tenant or hash is refused (RangeError).
   */
  async ensureWithKey(id: string, key: string | undefined): Promise<void> {
    if (!TENANT_ID_PATTERN.test(id)) throw new RangeError(`tenant id ${id} is not valid`);
    if (key !== undefined && tenantKeys.scheme.parse(key) === undefined)
      throw new RangeError("the key is not an mtk_… tenant key");
    const nowMs = this.#clock.nowMs();
    await this.#db.transaction(async (tx) => {
      await tx.query(
        "INSERT INTO tenants (id, name, created_at) VALUES ($1, $1, $2) ON CONFLICT (id) DO NOTHING",
        [id, new Date(nowMs)],
      );
      if (key !== undefined) await tenantKeys.register(tx, id, key, nowMs);
    });
  }

  /** The tenant a key belongs to, or undefined (malformed, unknown, wrong, expired, revoked). */
  async authenticate(key: string): Promise<Tenant | undefined> {
    return (await this.authenticatePresented([tenantKeys.scheme.parse(key)]))[0];
  }

  /**
   * `authenticate` for keys already parsed (prefix + sha256, what kit's VerifiedKeyCache
   * keeps), many at once: two queries for the whole batch, one answer per key, in order.
   */
  async authenticatePresented(
    presented: readonly (PresentedApiKey | undefined)[],
  ): Promise<(Tenant | undefined)[]> {
    const ids = await tenantKeys.authenticatePresented(this.#db, presented, this.#clock.nowMs());
    const wanted = [...new Set(ids.filter((id) => id !== undefined))];
    if (wanted.length === 0) return ids.map(() => undefined);
    const { rows } = await this.#db.query<TenantRow>(
      "SELECT id, max_series, max_series_per_metric FROM tenants WHERE id = ANY($1::text[])",
      [wanted],
    );
    const byId = new Map(rows.map((row) => [row.id, tenantOf(row)]));
    return ids.map((id) => (id === undefined ? undefined : byId.get(id)));
  }

  /** The tenant with this id and its ceilings, or undefined (the stream's consumers look tenants up by id). */
  async find(id: string): Promise<Tenant | undefined> {
    const { rows } = await this.#db.query<TenantRow>(
      "SELECT id, max_series, max_series_per_metric FROM tenants WHERE id = $1",
      [id],
    );
    return rows[0] === undefined ? undefined : tenantOf(rows[0]);
  }
}

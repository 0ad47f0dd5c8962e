/**
 * One TSDB per tenant under `<dir>/<tenant>/` (its own head, WAL and blocks), opened on first
 * use and kept open; a tenant's series never share an index with another's, so every query is
 * scoped by construction and one tenant's cardinality cannot grow another's index.
 *
 * @example
 * const tsdbs = new TenantTsdbs({ dir, blockRangeMs, defaults: { maxSeries: 1e6, maxSeriesPerMetric: 1e5 } });
 * const db = await tsdbs.of({ id: "acme", maxSeries: undefined, maxSeriesPerMetric: undefined });
 * await tsdbs.close();
 */
import { join } from "node:path";
import type { CardinalityLimits } from "../domain/head-block.ts";
import type { Tenant } from "./tenant-repository.ts";
import { Tsdb } from "./tsdb.ts";

export class TenantTsdbs {
  readonly #dir: string;
  readonly #blockRangeMs: number;
  readonly #defaults: CardinalityLimits;
  readonly #open = new Map<string, Promise<Tsdb>>();

  constructor(options: { dir: string; blockRangeMs: number; defaults: CardinalityLimits }) {
    this.#dir = options.dir;
    this.#blockRangeMs = options.blockRangeMs;
    this.#defaults = options.defaults;
  }

  of(tenant: Tenant): Promise<Tsdb> {
    let db = this.#open.get(tenant.id);
    if (db === undefined) {
      db = Tsdb.open({
        dir: join(this.#dir, tenant.id),
        blockRangeMs: this.#blockRangeMs,
        limits: {
          maxSeries: tenant.maxSeries ?? this.#defaults.maxSeries,
          maxSeriesPerMetric: tenant.maxSeriesPerMetric ?? this.#defaults.maxSeriesPerMetric,
        },
      });
      this.#open.set(tenant.id, db);
      db.catch(() => this.#open.delete(tenant.id));
    }
    return db;
  }

  /** The TSDBs opened so far (a tenant's opens at its first write or query since the start). */
  async opened(): Promise<Tsdb[]> {
    const all = await Promise.allSettled([...this.#open.values()]);
    return all.flatMap((db) => (db.status === "fulfilled" ? [db.value] : []));
  }

  /** Series in each opened tenant's head (the console's active series per tenant). */
  async seriesByTenant(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const [tenant, opening] of this.#open) {
      const db = await opening.catch(() => undefined);
      if (db !== undefined) counts.set(tenant, db.head.seriesCount);
    }
    return counts;
  }

  async close(): Promise<void> {
    const all = [...this.#open.values()];
    this.#open.clear();
    for (const db of await Promise.allSettled(all)) if (db.status === "fulfilled") await db.value.close();
  }
}

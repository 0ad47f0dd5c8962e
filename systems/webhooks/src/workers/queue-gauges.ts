/**
 * The store-backed gauges of WH-24: each tenant's oldest queued delivery age (one index probe
 * per tenant, every `ageRefreshMs`) and deliveries per tenant and state (a scan of the
 * deliveries table, so less often: every `countsRefreshMs`). Refreshed by the worker's loop
 * in the background, one refresh at a time; a failed refresh keeps the last values and is
 * logged. Pacing is real time: these are for scrapes, not for decisions.
 *
 * @example
 * const gauges = new QueueGauges(db, metrics, { clock, ageRefreshMs: 15_000, countsRefreshMs: 60_000 });
 * gauges.refreshIfDue(); // from a loop; returns at once
 * await gauges.settled();
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { WorkerMetrics } from "../metrics.ts";
import { deliveryCountsByTenant, oldestQueuedAgeByTenant } from "../store/delivery-metrics.ts";

export interface QueueGaugesOptions {
  clock: Clock;
  ageRefreshMs: number;
  countsRefreshMs: number;
  onError?: (error: unknown) => void;
}

export class QueueGauges {
  readonly #db: Queryable;
  readonly #metrics: WorkerMetrics;
  readonly #options: QueueGaugesOptions;
  #ageAtMs = Number.NEGATIVE_INFINITY;
  #countsAtMs = Number.NEGATIVE_INFINITY;
  #running: Promise<void> | undefined;

  constructor(db: Queryable, metrics: WorkerMetrics, options: QueueGaugesOptions) {
    for (const name of ["ageRefreshMs", "countsRefreshMs"] as const) {
      if (!(options[name] >= 1)) throw new RangeError(`${name} must be >= 1`);
    }
    this.#db = db;
    this.#metrics = metrics;
    this.#options = options;
  }

  /** Starts a refresh when one is due and none is running. */
  refreshIfDue(): void {
    if (this.#running !== undefined) return;
    const now = performance.now();
    const age = now - this.#ageAtMs >= this.#options.ageRefreshMs;
    const counts = now - this.#countsAtMs >= this.#options.countsRefreshMs;
    if (!age && !counts) return;
    this.#running = this.#refresh(age, counts)
      .catch((error: unknown) => this.#options.onError?.(error))
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** Resolves when no refresh is running. */
  async settled(): Promise<void> {
    await this.#running;
  }

  async #refresh(age: boolean, counts: boolean): Promise<void> {
    const m = this.#metrics;
    if (age) {
      this.#ageAtMs = performance.now();
      const rows = await oldestQueuedAgeByTenant(this.#db, this.#options.clock.nowMs());
      // Tenants folded into one label (`_other`) show the oldest of them.
      const oldest = new Map<string, number>();
      for (const r of rows) {
        const tenant = m.tenantLabel(r.tenantId);
        oldest.set(tenant, Math.max(oldest.get(tenant) ?? 0, r.ageMs / 1_000));
      }
      m.oldestQueuedAge.reset();
      for (const [tenant, ageS] of oldest) m.oldestQueuedAge.set({ tenant }, ageS);
    }
    if (counts) {
      this.#countsAtMs = performance.now();
      const rows = await deliveryCountsByTenant(this.#db);
      m.deliveries.reset();
      for (const r of rows)
        m.deliveries.inc({ tenant: m.tenantLabel(r.tenantId), state: r.state }, Number(r.count));
    }
  }
}

/**
 * The Prometheus metrics of flash-sale, registered on the service's own registry. Stock and
 * holds are read from the stores at scrape time (a gauge's `collect`), so every replica
 * reports the same truth; counters count what this replica did.
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0", read });
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { HoldState } from "./domain/hold-lifecycle.ts";

export interface MetricsReader {
  /** Available tickets per sale from the hot counter (-1: lost, being recomputed). */
  stock(): Promise<{ saleId: string; available: number }[]>;
  holdsByState(): Promise<Record<HoldState, number>>;
}

export interface SystemMetrics {
  readonly buildInfo: Gauge<"version">;
  /** Reservation attempts by outcome: held, sold_out, refused. */
  readonly reservations: Counter<"outcome">;
  /** FS-11 recomputes after the hot store lost a sale's stock. */
  readonly recomputes: Counter;
  /** Expired or released holds whose tickets the reconciler gave back. */
  readonly holdsReturned: Counter;
}

export function createMetrics(
  registry: Registry,
  build: { version: string; read: MetricsReader },
): SystemMetrics {
  const buildInfo = new Gauge({
    name: "flash_sale_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers: [registry],
  });
  buildInfo.set({ version: build.version }, 1);
  new Gauge({
    name: "flash_sale_stock_available",
    help: "Tickets neither sold nor held, per sale, from the hot counter (-1 while it is recomputed)",
    labelNames: ["sale"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await build.read.stock()) this.set({ sale: s.saleId }, s.available);
    },
  });
  new Gauge({
    name: "flash_sale_holds",
    help: "Holds by state, all sales",
    labelNames: ["state"],
    registers: [registry],
    async collect() {
      const counts = await build.read.holdsByState();
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  const reservations = new Counter({
    name: "flash_sale_reservations_total",
    help: "Reservation attempts by outcome (held, sold_out, refused)",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const recomputes = new Counter({
    name: "flash_sale_stock_recomputes_total",
    help: "Stock recomputed from PostgreSQL after the hot store lost it (FS-11)",
    registers: [registry],
  });
  const holdsReturned = new Counter({
    name: "flash_sale_holds_returned_total",
    help: "Holds whose tickets the reconciler gave back to the stock",
    registers: [registry],
  });
  return { buildInfo, reservations, recomputes, holdsReturned };
}

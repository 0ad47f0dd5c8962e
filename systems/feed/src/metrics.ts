/**
 * The Prometheus metrics of feed, registered on the service's own registry (served at
 * /metrics beside the base's HTTP histogram and the Node process metrics). Names follow
 * Prometheus' conventions: `feed_` first, the unit last (`_seconds`, `_bytes`,
 * `_total`).
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" });
 */
import { Gauge, type Registry } from "prom-client";

export interface SystemMetrics {
  /** Always 1, labelled with the running version: joins a dashboard's series to a deploy. */
  readonly buildInfo: Gauge<"version">;
}

export function createMetrics(registry: Registry, build: { version: string }): SystemMetrics {
  const buildInfo = new Gauge({
    name: "feed_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers: [registry],
  });
  buildInfo.set({ version: build.version }, 1);
  return { buildInfo };
}

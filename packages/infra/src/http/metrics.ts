/**
 * Prometheus metrics for one service: a Registry of its own (never prom-client's
 * global one, so several services in one process or test do not clash), the
 * default Node process metrics, and `http_request_duration_seconds` labelled by
 * method, route PATTERN and status code.
 *
 * The label is the route pattern (`/v1/links/:id`), never the raw URL: raw URLs
 * would make one time series per id and exhaust Prometheus. Requests that match
 * no route share the single label value `UNMATCHED_ROUTE`.
 *
 * @example
 * const registry = createMetricsRegistry();
 * const duration = createHttpDurationHistogram(registry);
 * duration.observe({ method: "GET", route: "/v1/links/:id", status_code: "200" }, 0.004);
 * await registry.metrics(); // Prometheus text format
 */
import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { RequestHistogram } from "./request-histogram.ts";

export const UNMATCHED_ROUTE = "(unmatched)";

/**
 * Seconds; from 1 ms (a cache hit) to 10 s (just under the handler timeout), about
 * 2.5× apart so p50/p99 interpolate within a useful error.
 */
export const httpDurationBucketsS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export type HttpLabel = "method" | "route" | "status_code";

let processMetrics: Registry | undefined;

/**
 * The default Node metrics, collected ONCE per process: each collectDefaultMetrics
 * call starts its own event-loop-delay monitor and GC observer that are never
 * stopped, so collecting them per service would leak one set per service created.
 * The same metric objects are then registered in every service's registry.
 */
function sharedProcessMetrics(): Registry {
  if (processMetrics === undefined) {
    processMetrics = new Registry();
    collectDefaultMetrics({ register: processMetrics, eventLoopMonitoringPrecision: 10 });
  }
  return processMetrics;
}

/** A fresh registry for one service, holding the process metrics unless `defaultMetrics: false`. */
export function createMetricsRegistry(options: { defaultMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (options.defaultMetrics === false) return registry;
  const shared = sharedProcessMetrics();
  for (const { name } of shared.getMetricsAsArray()) {
    const metric = shared.getSingleMetric(name);
    if (metric) registry.registerMetric(metric);
  }
  return registry;
}

/**
 * The request-duration histogram, registered in `registry` only: a `RequestHistogram`, whose
 * `labels(method, route, status)` child a hot path keeps (request-histogram.ts).
 */
export function createHttpDurationHistogram(registry: Registry): RequestHistogram<HttpLabel> {
  return new RequestHistogram({
    name: "http_request_duration_seconds",
    help: "Time from receiving a request to sending the last byte of its response.",
    labelNames: ["method", "route", "status_code"],
    buckets: httpDurationBucketsS,
    registry,
  });
}

/** The request-duration histogram a service's registry holds (its base made it), for a path that answers before Fastify. */
export function httpDurationHistogramOf(registry: Registry): RequestHistogram<HttpLabel> | undefined {
  const metric: unknown = registry.getSingleMetric("http_request_duration_seconds");
  return metric instanceof RequestHistogram ? (metric as RequestHistogram<HttpLabel>) : undefined;
}

/**
 * A gauge whose value is read from its source of truth at each scrape: nothing to update on
 * the hot path.
 *
 * @example
 * scrapedGauge(registry, "cache_keys", "Keys held.", () => keyspace.size);
 */
export function scrapedGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** A counter read from a monotonic source of truth at each scrape (`_total` in the name). */
export function scrapedCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

/**
 * The delivery worker's metrics (WH-24, WH-15: per tenant, so fairness is visible), on the
 * service's registry (exposed at /metrics):
 *
 *   webhooks_commit_to_2xx_seconds{tenant}             histogram: event commit → the endpoint's 2xx
 *                                                      (p50/p95/p99: histogram_quantile, or
 *                                                      commitTo2xxQuantiles below)
 *   webhooks_attempts_total{tenant,response_class}     every recorded attempt, by the core's class
 *   webhooks_deliveries_finished_total{tenant,state}   final states this worker wrote: succeeded,
 *                                                      and the dropped ones — failed, expired,
 *                                                      quarantined, cancelled
 *   webhooks_oldest_queued_age_seconds{tenant}         age of the oldest unfinished delivery
 *                                                      (store query, refreshed at most every N s)
 *   webhooks_deliveries{tenant,state}                  deliveries per state in the store, all
 *                                                      writers included (sweeper expiries too)
 *   webhooks_sends_without_secret_total{tenant}        deliveries not sent: no valid signing secret
 *   webhooks_deferred_total{reason}                    given back unattempted: retry_budget |
 *                                                      endpoint_hold
 *   webhooks_send_skipped_total{reason}                re-check said no: subscription_inactive |
 *                                                      deadline_passed | payload_expired
 *   webhooks_lease_lost_total{stage}                   a write lost its CAS: claim taken over
 *   webhooks_worker_in_flight, webhooks_worker_queued  this process's sends and claimed backlog
 *
 * "Invalid signatures" (the seed's list) is a receiver-side fact: a sender cannot see the
 * receiver's verification fail except as a 4xx. What the sender can see is a delivery it
 * could not sign at all, counted by `sends_without_secret`.
 *
 * The tenant label is bounded (MAX_TENANT_LABELS distinct values, the rest as `_other`),
 * so a tenant-creation spree cannot exhaust Prometheus.
 *
 * @example
 * const metrics = createWorkerMetrics(service.registry);
 * new DeliveryWorker({ …, metrics });
 * await commitTo2xxQuantiles(metrics, "acme"); // { p50: 0.031, p95: 0.08, p99: 0.12, count: 1_000 }
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import { bucketQuantile, type CumulativeBucket } from "./domain/bucket-quantile.ts";

/** Seconds: 5 ms (a local receiver) up to the 24 h window, a few buckets per decade. */
export const commitTo2xxBucketsS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3_600, 21_600, 86_400,
];
/** Distinct tenant label values; later tenants share `_other`. */
export const MAX_TENANT_LABELS = 1_000;
export const OTHER_TENANT = "_other";

export interface WorkerMetrics {
  readonly commitTo2xx: Histogram<"tenant">;
  readonly attempts: Counter<"tenant" | "response_class">;
  readonly finished: Counter<"tenant" | "state">;
  readonly oldestQueuedAge: Gauge<"tenant">;
  readonly deliveries: Gauge<"tenant" | "state">;
  readonly sendsWithoutSecret: Counter<"tenant">;
  readonly deferred: Counter<"reason">;
  readonly skipped: Counter<"reason">;
  readonly leaseLost: Counter<"stage">;
  readonly inFlight: Gauge;
  readonly queued: Gauge;
  /** The label value for `tenantId` (bounded, see MAX_TENANT_LABELS). */
  tenantLabel(tenantId: string): string;
}

/** The worker's metrics, registered in `registry` only. */
export function createWorkerMetrics(registry: Registry): WorkerMetrics {
  const registers = [registry];
  const seen = new Set<string>();
  return {
    commitTo2xx: new Histogram({
      name: "webhooks_commit_to_2xx_seconds",
      help: "From the event's commit to the endpoint's 2xx, per tenant (WH-24).",
      labelNames: ["tenant"],
      buckets: commitTo2xxBucketsS,
      registers,
    }),
    attempts: new Counter({
      name: "webhooks_attempts_total",
      help: "Delivery attempts recorded, by tenant and response class (2xx, 4xx, 5xx, throttled, timeout_*, …).",
      labelNames: ["tenant", "response_class"],
      registers,
    }),
    finished: new Counter({
      name: "webhooks_deliveries_finished_total",
      help: "Deliveries this worker put in a final state; failed, expired, quarantined and cancelled are dropped.",
      labelNames: ["tenant", "state"],
      registers,
    }),
    oldestQueuedAge: new Gauge({
      name: "webhooks_oldest_queued_age_seconds",
      help: "Age of each tenant's oldest pending or in-flight delivery (0: none), refreshed periodically.",
      labelNames: ["tenant"],
      registers,
    }),
    deliveries: new Gauge({
      name: "webhooks_deliveries",
      help: "Deliveries per tenant and state in the store, refreshed periodically.",
      labelNames: ["tenant", "state"],
      registers,
    }),
    sendsWithoutSecret: new Counter({
      name: "webhooks_sends_without_secret_total",
      help: "Deliveries not sent because their subscription had no valid signing secret (the sender-side view of invalid signatures).",
      labelNames: ["tenant"],
      registers,
    }),
    deferred: new Counter({
      name: "webhooks_deferred_total",
      help: "Claimed deliveries given back unattempted: retry_budget (WH-20) or endpoint_hold (Retry-After).",
      labelNames: ["reason"],
      registers,
    }),
    skipped: new Counter({
      name: "webhooks_send_skipped_total",
      help: "Claimed deliveries the re-check before sending stopped (WH-04, WH-18).",
      labelNames: ["reason"],
      registers,
    }),
    leaseLost: new Counter({
      name: "webhooks_lease_lost_total",
      help: "Worker writes that lost their compare-and-swap: another worker owns the delivery now.",
      labelNames: ["stage"],
      registers,
    }),
    inFlight: new Gauge({
      name: "webhooks_worker_in_flight",
      help: "Deliveries this process is sending or recording now.",
      registers,
    }),
    queued: new Gauge({
      name: "webhooks_worker_queued",
      help: "Deliveries this process has claimed and not yet started.",
      registers,
    }),
    tenantLabel(tenantId: string): string {
      if (seen.has(tenantId)) return tenantId;
      if (seen.size >= MAX_TENANT_LABELS) return OTHER_TENANT;
      seen.add(tenantId);
      return tenantId;
    },
  };
}

export interface LatencyQuantiles {
  p50: number | undefined;
  p95: number | undefined;
  p99: number | undefined;
  /** Observations behind them. */
  count: number;
}

/** Commit→2xx p50/p95/p99 of one tenant, in seconds, from the histogram's buckets (WH-24). */
export async function commitTo2xxQuantiles(
  metrics: WorkerMetrics,
  tenantId: string,
): Promise<LatencyQuantiles> {
  const tenant = metrics.tenantLabel(tenantId);
  const { values } = await metrics.commitTo2xx.get();
  const buckets: CumulativeBucket[] = [];
  for (const v of values) {
    // Bucket samples carry `le` beside the declared labels.
    const labels = v.labels as Record<string, string | number | undefined>;
    if (!v.metricName?.endsWith("_bucket") || labels.tenant !== tenant) continue;
    buckets.push({ le: labels.le === "+Inf" ? Number.POSITIVE_INFINITY : Number(labels.le), count: v.value });
  }
  const count = buckets.find((b) => b.le === Number.POSITIVE_INFINITY)?.count ?? 0;
  return {
    p50: bucketQuantile(0.5, buckets),
    p95: bucketQuantile(0.95, buckets),
    p99: bucketQuantile(0.99, buckets),
    count,
  };
}

/**
 * The Prometheus metrics of metrics, registered on the service's own registry (served at
 * /metrics beside the base's HTTP histogram and the Node process metrics). Names follow
 * Prometheus' conventions: `metrics_` first, the unit last (`_seconds`, `_bytes`,
 * `_total`).
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" });
 * metrics.ingestedSamples.inc({ tenant: "acme" }, 120);
 */
import { Counter, Gauge, type Registry } from "prom-client";

export interface SystemMetrics {
  /** Always 1, labelled with the running version: joins a dashboard's series to a deploy. */
  readonly buildInfo: Gauge<"version">;
  /** Samples stored (acknowledged to the sender), per tenant. */
  readonly ingestedSamples: Counter<"tenant">;
  /** MT-07: samples acknowledged after the stream's ack (the hot writer stores them after), per tenant. */
  readonly streamedSamples: Counter<"tenant">;
  /** Stream messages the hot writer dropped (refused by the TSDB, unknown tenant), per reason. */
  readonly droppedMessages: Counter<"reason">;
  /** Alert notifications the evaluator sent, per rule and status. */
  readonly alertNotifications: Counter<"alertname" | "status">;
  /** MT-16: new series refused by a cardinality ceiling, per tenant. */
  readonly refusedSeries: Counter<"tenant">;
  /** MT-06: samples per partition (hash of the series): how evenly series spread. */
  readonly partitionSamples: Counter<"partition">;
  /** MT-10: samples older than the rollup watermark, left out of the 1 min and 1 h tiers, per tenant. */
  readonly lateRollupSamples: Counter<"tenant">;
}

export function createMetrics(registry: Registry, build: { version: string }): SystemMetrics {
  const buildInfo = new Gauge({
    name: "metrics_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers: [registry],
  });
  buildInfo.set({ version: build.version }, 1);
  const ingestedSamples = new Counter({
    name: "metrics_ingested_samples_total",
    help: "Samples stored and acknowledged, per tenant",
    labelNames: ["tenant"],
    registers: [registry],
  });
  const refusedSeries = new Counter({
    name: "metrics_refused_series_total",
    help: "New series refused by a cardinality limit (MT-16), per tenant",
    labelNames: ["tenant"],
    registers: [registry],
  });
  const partitionSamples = new Counter({
    name: "metrics_partition_samples_total",
    help: "Samples per ingest partition (hash of the series, MT-06)",
    labelNames: ["partition"],
    registers: [registry],
  });
  const streamedSamples = new Counter({
    name: "metrics_streamed_samples_total",
    help: "Samples acknowledged to the sender after the stream's ack (MT-07), per tenant",
    labelNames: ["tenant"],
    registers: [registry],
  });
  const droppedMessages = new Counter({
    name: "metrics_hot_writer_dropped_messages_total",
    help: "Stream messages the hot writer dropped: refused by the TSDB (out of order), unknown tenant, malformed",
    labelNames: ["reason"],
    registers: [registry],
  });
  const alertNotifications = new Counter({
    name: "metrics_alert_notifications_total",
    help: "Alert notifications the evaluator sent (Alertmanager webhook bodies), per rule and status",
    labelNames: ["alertname", "status"],
    registers: [registry],
  });
  const lateRollupSamples = new Counter({
    name: "metrics_rollup_late_samples_total",
    help: "Samples older than the rollup watermark (newest − lateness): raw only, left out of the tiers, per tenant",
    labelNames: ["tenant"],
    registers: [registry],
  });
  return {
    lateRollupSamples,
    buildInfo,
    ingestedSamples,
    streamedSamples,
    alertNotifications,
    droppedMessages,
    refusedSeries,
    partitionSamples,
  };
}

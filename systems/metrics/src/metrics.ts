/**
 * The Prometheus metrics of metrics, registered on the service's own registry (served at
 * /metrics beside the base's HTTP histogram and the Node process metrics). Names follow
 * Prometheus' conventions: `metrics_` first, the unit last (`_seconds`, `_bytes`,
 * `_total`). The console's page plots them (`casebook.console` in package.json).
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" }, {
 *   seriesByTenant: () => tsdbs.seriesByTenant(),
 *   alertStates: () => evaluator?.alerts().map((a) => a.state) ?? [],
 * });
 * metrics.ingestedSamples.inc({ tenant: "acme" }, 120);
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** Why samples were refused: the batch broke a rule, a new series met a ceiling, or it came out of order. */
export type RefusedSamplesReason = "invalid" | "series_limit" | "out_of_order";

/** What the scrape-time gauges read from the running system. */
export interface MetricsSources {
  /** Series in each opened tenant's head block (its active series). */
  seriesByTenant(): Promise<ReadonlyMap<string, number>>;
  /** The state of every alert the evaluator holds ("pending", "firing"); none without an evaluator. */
  alertStates(): readonly string[];
}

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
  /** Alert events the webhooks system answered as repeats of a key it had (a retry or a restart's repeat). */
  readonly alertDuplicates: Counter;
  /** Alert notifications pushed out of a sink's full queue, never sent (the receiver lags or is down). */
  readonly alertNotificationsDropped: Counter;
  /** MT-16: new series refused by a cardinality ceiling, per tenant. */
  readonly refusedSeries: Counter<"tenant">;
  /** MT-06: samples per partition (hash of the series): how evenly series spread. */
  readonly partitionSamples: Counter<"partition">;
  /** MT-10: samples older than the rollup watermark, left out of the 1 min and 1 h tiers, per tenant. */
  readonly lateRollupSamples: Counter<"tenant">;
  /** Samples refused — a whole invalid batch, a series past a ceiling, a message out of order — per tenant and reason. */
  readonly refusedSamples: Counter<"tenant" | "reason">;
  /** MT-07: from the stream storing a message to the hot writer's ack; its count is the messages applied. */
  readonly hotWriterLag: Histogram<never>;
  /** MT-08: rule evaluations (one rule for one tenant's window) the alert evaluator ran. */
  readonly ruleEvaluations: Counter<never>;
  /** The scraper's rounds per target: result ok, or failed (down, bad body, over the sample limit). */
  readonly scrapes: Counter<"job" | "result">;
  /** Staleness markers the scraper wrote: series gone from a target, or a target gone. */
  readonly scrapeStaleMarkers: Counter<"job">;
}

/** The hot writer's lag buckets, in seconds: milliseconds when it keeps up, MT-01's minute when it does not. */
const LAG_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export function createMetrics(
  registry: Registry,
  build: { version: string },
  sources: MetricsSources,
): SystemMetrics {
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
  const alertDuplicates = new Counter({
    name: "metrics_alert_webhooks_duplicates_total",
    help: "Alert events the webhooks system answered as repeats of an Idempotency-Key it had: stored and delivered once",
    registers: [registry],
  });
  const alertNotificationsDropped = new Counter({
    name: "metrics_alert_notifications_dropped_total",
    help: "Alert notifications pushed out of the sink's full queue (oldest first) and never sent: the receiver lags or is down",
    registers: [registry],
  });
  const lateRollupSamples = new Counter({
    name: "metrics_rollup_late_samples_total",
    help: "Samples older than the rollup watermark (newest − lateness): raw only, left out of the tiers, per tenant",
    labelNames: ["tenant"],
    registers: [registry],
  });
  const refusedSamples = new Counter({
    name: "metrics_refused_samples_total",
    help: "Samples refused: invalid (the whole batch broke a rule, 400), series_limit (a new series past a cardinality ceiling, MT-16), out_of_order (a stream message the TSDB refused)",
    labelNames: ["tenant", "reason"],
    registers: [registry],
  });
  const hotWriterLag = new Histogram({
    name: "metrics_hot_writer_lag_seconds",
    help: "From the stream storing a message to the hot writer's ack of it (MT-07); the count is the messages applied",
    buckets: LAG_BUCKETS_S,
    registers: [registry],
  });
  const ruleEvaluations = new Counter({
    name: "metrics_alert_rule_evaluations_total",
    help: "Alert rule evaluations off the stream (MT-08): one rule over one tenant's window",
    registers: [registry],
  });
  new Gauge({
    name: "metrics_head_series",
    help: "Series in each tenant's head block: its active series, held against its cardinality ceilings (MT-13/16)",
    labelNames: ["tenant"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const [tenant, n] of await sources.seriesByTenant()) this.set({ tenant }, n);
    },
  });
  new Gauge({
    name: "metrics_alerts",
    help: "Alerts the evaluator holds, all tenants, by state (pending, firing)",
    labelNames: ["state"],
    registers: [registry],
    collect() {
      const counts = new Map<string, number>([
        ["pending", 0],
        ["firing", 0],
      ]);
      for (const state of sources.alertStates())
        if (counts.has(state)) counts.set(state, counts.get(state)! + 1); // not the resolved ones still held
      for (const [state, n] of counts) this.set({ state }, n);
    },
  });
  const scrapes = new Counter({
    name: "metrics_scrapes_total",
    help: "Scrapes of a target's /metrics, per job and result (ok, failed)",
    labelNames: ["job", "result"],
    registers: [registry],
  });
  const scrapeStaleMarkers = new Counter({
    name: "metrics_scrape_stale_markers_total",
    help: "Staleness markers the scraper wrote: a series or a whole target gone since the previous scrape",
    labelNames: ["job"],
    registers: [registry],
  });
  return {
    refusedSamples,
    hotWriterLag,
    ruleEvaluations,
    scrapes,
    scrapeStaleMarkers,
    lateRollupSamples,
    buildInfo,
    ingestedSamples,
    streamedSamples,
    alertNotifications,
    alertDuplicates,
    alertNotificationsDropped,
    droppedMessages,
    refusedSeries,
    partitionSamples,
  };
}

/**
 * The agent process's own metrics (`metrics-agent` tool), on its service's /metrics; the
 * guard's counts are read from the aggregator at each scrape. The drops (MT-04) are also
 * shipped to the ingest as `metrics_agent_dropped_samples_total`, so a loss shows where the
 * data goes.
 */
export interface AgentMetrics {
  readonly records: Counter<never>;
  readonly sentSamples: Counter<never>;
  readonly sentBytes: Counter<never>;
  readonly droppedSamples: Counter<"reason">;
  readonly bufferedBytes: Gauge<"where">;
}

export function createAgentMetrics(
  registry: Registry,
  read: {
    guard: () => { newSeries: ReadonlyMap<string, number>; overflowRecords: ReadonlyMap<string, number> };
    labelValues: () => ReadonlyMap<string, ReadonlyMap<string, number>>;
    buffered: () => { memoryBytes: number; spoolBytes: number };
  },
): AgentMetrics {
  const records = new Counter({
    name: "metrics_agent_records_total",
    help: "Records applications sent the agent (before its 10 s aggregation, MT-02)",
    registers: [registry],
  });
  const sentSamples = new Counter({
    name: "metrics_agent_sent_samples_total",
    help: "Samples the ingest acknowledged (after aggregation, MT-02/03)",
    registers: [registry],
  });
  const sentBytes = new Counter({
    name: "metrics_agent_sent_bytes_total",
    help: "Compressed bytes of the batches the ingest acknowledged (MT-03)",
    registers: [registry],
  });
  const droppedSamples = new Counter({
    name: "metrics_agent_dropped_samples_total",
    help: "Samples the agent lost: spool_full (the oldest evicted, MT-04) or rejected (a 4xx from the ingest)",
    labelNames: ["reason"],
    registers: [registry],
  });
  const bufferedBytes = new Gauge({
    name: "metrics_agent_buffered_bytes",
    help: "Batches waiting for the ingest, in memory and in the disk spool (MT-04)",
    labelNames: ["where"],
    registers: [registry],
    collect() {
      const now = read.buffered();
      this.set({ where: "memory" }, now.memoryBytes);
      this.set({ where: "spool" }, now.spoolBytes);
    },
  });
  new Gauge({
    name: "metrics_agent_new_series",
    help: "Series the agent saw appear, per metric (MT-16's agent side)",
    labelNames: ["metric"],
    registers: [registry],
    collect() {
      for (const [metric, n] of read.guard().newSeries) this.set({ metric }, n);
    },
  });
  new Gauge({
    name: "metrics_agent_overflow_records",
    help: "Records of a new series past the agent's per-metric ceiling, folded into the overflow series (MT-15)",
    labelNames: ["metric"],
    registers: [registry],
    collect() {
      for (const [metric, n] of read.guard().overflowRecords) this.set({ metric }, n);
    },
  });
  new Gauge({
    name: "metrics_agent_label_values",
    help: "Distinct values of a label among the series the agent holds, per metric (MT-16 per tag)",
    labelNames: ["metric", "label"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [metric, labels] of read.labelValues())
        for (const [label, n] of labels) this.set({ metric, label }, n);
    },
  });
  return { records, sentSamples, sentBytes, droppedSamples, bufferedBytes };
}

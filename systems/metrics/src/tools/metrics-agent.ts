/**
 * The metrics agent as its own process (MT-02/03/04/15/16): `npx casebook metrics agent`,
 * one per host. Applications (the client library, `src/client/metrics-client.ts`) POST their
 * records to it on loopback; it aggregates them into 10 s windows with its cardinality
 * guard (`domain/agent-aggregator.ts`), cuts the closed windows every 5 s into
 * snappy-compressed remote-write batches, keeps them in memory then in a size-bounded disk
 * spool (`store/agent-spool.ts`) and ships them to the ingest with the tenant's API key
 * (`workers/agent-shipper.ts`). When the spool is full the oldest batches go, counted in
 * `metrics_agent_dropped_samples_total` — on its /metrics and shipped as a series of its own.
 *
 * @example
 * // METRICS_AGENT_API_KEY=mtk_… METRICS_AGENT_INGEST_URL=http://127.0.0.1:8112 node systems/metrics/src/tools/metrics-agent.ts
 * const agent = await startAgent({ METRICS_AGENT_API_KEY: key, METRICS_AGENT_PORT: "0" });
 * agent.url; // http://127.0.0.1:<port>
 * await agent.close();
 */
import { createService, type Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { dataDirFor } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import packageJson from "../../package.json" with { type: "json" };
import { registerAgentRoutes } from "../api/agent-routes.ts";
import { type AgentConfig, agentConfigSchema, loadAgentConfig } from "../config.ts";
import { AgentAggregator } from "../domain/agent-aggregator.ts";
import { DEFAULT_AGENT_MAX_BATCH_SAMPLES } from "../domain/agent-batch.ts";
import { errors } from "../errors.ts";
import { type AgentMetrics, createAgentMetrics } from "../metrics.ts";
import { AgentSpool } from "../store/agent-spool.ts";
import { AgentShipper } from "../workers/agent-shipper.ts";

/** Largest flush an application may POST. */
export const MAX_AGENT_BODY_BYTES = 16 * 1024 * 1024;
const DROPPED = "metrics_agent_dropped_samples_total";

export interface RunningAgent {
  readonly url: string;
  readonly service: Service;
  readonly config: AgentConfig;
  readonly aggregator: AgentAggregator;
  readonly spool: AgentSpool;
  readonly shipper: AgentShipper;
  close(): Promise<void>;
}

export async function startAgent(env: NodeJS.ProcessEnv = process.env): Promise<RunningAgent> {
  const config = loadAgentConfig(env);
  const service = createService({
    name: "metrics-agent",
    version: packageJson.version,
    log: { level: config.logLevel },
    errors: [errors],
    bodyLimitBytes: MAX_AGENT_BODY_BYTES,
    description: "metrics agent: applications' records in, 10 s aggregates out to the ingest",
  });
  const aggregator = new AgentAggregator({
    windowMs: config.windowMs,
    maxSeriesPerMetric: config.maxSeriesPerMetric,
    maxSeries: config.maxSeries,
    deniedLabels: config.deniedLabels === "" ? [] : config.deniedLabels.split(","),
  });
  const totals = { sentSamples: 0, sentBatches: 0, rejectedSamples: 0 };
  let metrics: AgentMetrics | undefined;
  // A loss is recorded like any application's counter, so it reaches the platform with the data.
  const recordDrop = (reason: string, samples: number) => {
    metrics?.droppedSamples.inc({ reason }, samples);
    aggregator.record(
      { kind: "counter", name: DROPPED, labels: { reason }, value: samples },
      systemClock.nowMs(),
    );
  };
  const spool = await AgentSpool.open({
    dir: config.spoolDir ?? dataDirFor("metrics-agent-spool", env),
    maxMemoryBytes: config.memoryBytes,
    maxSpoolBytes: config.spoolBytes,
    onDropped: (samples) => recordDrop("spool_full", samples),
  });
  const agentMetrics = createAgentMetrics(service.registry, {
    guard: () => aggregator.counts(),
    labelValues: () => aggregator.labelValues(),
    buffered: () => spool.stats(),
  });
  metrics = agentMetrics;
  const shipper = new AgentShipper({
    aggregator,
    spool,
    ingestUrl: config.ingestUrl,
    apiKey: config.apiKey,
    batchMs: config.batchMs,
    retryCapMs: config.retryCapMs,
    maxBatchSamples: DEFAULT_AGENT_MAX_BATCH_SAMPLES,
    clock: systemClock,
    onSent: (samples, bytes) => {
      totals.sentSamples += samples;
      totals.sentBatches++;
      agentMetrics.sentSamples.inc(samples);
      agentMetrics.sentBytes.inc(bytes);
    },
    onRejected: (samples, status, detail) => {
      totals.rejectedSamples += samples;
      recordDrop("rejected", samples);
      service.log.error({ status, detail, samples }, "the ingest refused a batch: dropped");
    },
    onError: (what, error, failures) => {
      // The ingest being away is expected: say it at the first failure, then every 10th.
      if (failures === 1 || failures % 10 === 0)
        service.log.warn({ err: error, failures }, `agent ${what} failed (batches kept)`);
    },
  });
  await registerAgentRoutes(service.app, {
    aggregator,
    clock: systemClock,
    bodyLimitBytes: MAX_AGENT_BODY_BYTES,
    onRecords: (n) => agentMetrics.records.inc(n),
    status: () => {
      const guard = aggregator.counts();
      return {
        series: aggregator.seriesCount,
        records: guard.records,
        points: guard.points,
        newSeries: Object.fromEntries(guard.newSeries),
        overflowRecords: Object.fromEntries(guard.overflowRecords),
        strippedLabels: Object.fromEntries(guard.strippedLabels),
        labelValues: Object.fromEntries(
          [...aggregator.labelValues()].map(([metric, labels]) => [metric, Object.fromEntries(labels)]),
        ),
        requests: shipper.requests,
        ...totals,
        ...spool.stats(),
      };
    },
  });
  shipper.start();
  service.onClose(async () => {
    await shipper.stop();
    await shipper.cut(); // closed windows onto the spool, and all of it to disk: a restart sends it first
    await spool.persist();
  });
  const { url } = await service.listen({ port: config.port, host: config.host });
  service.log.info({ url, ingest: config.ingestUrl }, "metrics agent listening");
  return { url, service, config, aggregator, spool, shipper, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "metrics-agent",
    summary: "the per-host metrics agent: 10 s aggregation, 5 s compressed batches, memory + disk spool",
    schema: agentConfigSchema,
    usage: ["npx casebook metrics agent", "node systems/metrics/src/tools/metrics-agent.ts"],
    notes: 'The agent, its wire and its guarantees: systems/metrics/README.md ("The agent")',
    start: async () => (await startAgent()).service,
  });
}

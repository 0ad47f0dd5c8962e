/**
 * The settings of metrics: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * The database (PGlite by default, PostgreSQL with DATABASE_URL) holds tenants and their
 * hashed API keys; the TSDB (head, WAL, blocks) lives in its own directory. The scraper's
 * settings (METRICS_SCRAPE_*) mirror a Prometheus `scrape_config`: targets as job=url,
 * interval, timeout (never above the interval), body and sample limits, and the tenant.
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.maxSeriesPerMetric; // 100000
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { ConfigError, type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import { webhooksConfigProblems } from "@casebook/webhooks/client";
import packageJson from "../package.json" with { type: "json" };
import { parseScrapeTargets, ScrapeTargetError } from "./domain/scrape-target.ts";
import { MAX_PARTITIONS } from "./domain/series-partition.ts";
import { errors } from "./errors.ts";

export const BOOTSTRAP_OFF = "off";
export const DEFAULT_BOOTSTRAP_TENANT = "demo";
/** The scrape tenant when there is no bootstrap tenant either. */
export const DEFAULT_SCRAPE_TENANT = "casebook";
/** `name=value` pairs, comma-separated: the standard labels the ingest adds. */
export const STANDARD_LABELS_PATTERN = /^([a-zA-Z_][a-zA-Z0-9_]*=[^,=]+)(,[a-zA-Z_][a-zA-Z0-9_]*=[^,=]+)*$/;

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  ...databaseFields({
    system: "metrics",
    envPrefix: "METRICS_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs", "connectTimeoutMs"],
    maxConnectionsDefault: 10,
    statementTimeoutMsDefault: 5_000,
  }),
  tsdbDir: field.string({
    env: "METRICS_TSDB_DIR",
    maxLength: 4_096,
    description: "Directory of the TSDB (per tenant: WAL and blocks); unset = $CASEBOOK_DATA/metrics-tsdb",
  }),
  blockRangeMs: field.int({
    env: "METRICS_BLOCK_RANGE_MS",
    default: 7_200_000,
    min: 60_000,
    max: 86_400_000,
    description:
      "Time range of one persisted block; the head compacts when it spans 1.5 of these (Prometheus: 2 h)",
  }),
  maxSeries: field.int({
    env: "METRICS_MAX_SERIES",
    default: 1_000_000,
    min: 1,
    max: 100_000_000,
    description:
      "MT-16: series a tenant may hold (a tenant's own setting wins); new series past it are refused",
  }),
  maxSeriesPerMetric: field.int({
    env: "METRICS_MAX_SERIES_PER_METRIC",
    default: 100_000,
    min: 1,
    max: 100_000_000,
    description: "MT-16: series one metric name may hold per tenant; new series past it are refused",
  }),
  partitions: field.int({
    env: "METRICS_PARTITIONS",
    min: 1,
    max: MAX_PARTITIONS,
    description:
      "MT-06: partitions the ingest hashes series into (each series always to the same one); unset = the stream's own count (kept with it), or 4 for a new stream; a count other than the stream's is refused (src/store/stream-layout.ts)",
  }),
  ingestPath: field.enum(["stream", "direct"], {
    env: "METRICS_INGEST_PATH",
    default: "stream",
    description:
      "MT-07: stream = the ingest publishes to the stream (NATS JetStream with NATS_URL, in-process otherwise) and the hot writer stores; direct = the ingest appends to the TSDB itself",
  }),
  consumers: field.enum(["on", "off"], {
    env: "METRICS_CONSUMERS",
    default: "on",
    description:
      "MT-05: off = this process only ingests (and answers queries on an empty TSDB): run several behind an L4 balancer, and one with the stream's consumers (hot writer, alert evaluator)",
  }),
  natsUrl: field.string({
    env: "NATS_URL",
    maxLength: 2_048,
    description: "NATS JetStream server of the stream; unset = the in-process log",
  }),
  streamRetentionMs: field.int({
    env: "METRICS_STREAM_RETENTION_MS",
    default: 3_600_000,
    min: 60_000,
    max: 7 * 86_400_000,
    description:
      "How long the stream keeps samples: a consumer further behind than this loses the oldest (the ingest stays up)",
  }),
  streamMaxBytes: field.int({
    env: "METRICS_STREAM_MAX_BYTES",
    default: 256 * 1024 * 1024,
    min: 1024 * 1024,
    max: 64 * 1024 * 1024 * 1024,
    description: "Bytes the stream keeps at most (the oldest go first past it)",
  }),
  hotWriterAckWaitMs: field.int({
    env: "METRICS_HOT_WRITER_ACK_WAIT_MS",
    default: 30_000,
    min: 100,
    max: 600_000,
    description:
      "A message the hot writer took and did not acknowledge (it died) is delivered again after this",
  }),
  rollupDir: field.string({
    env: "METRICS_ROLLUP_DIR",
    maxLength: 4_096,
    description:
      "MT-09: directory of the rollup tiers (1 min: a DuckDB file; 1 h: Parquet per tenant per day); unset = $CASEBOOK_DATA/metrics-rollups",
  }),
  rollupLatenessMs: field.int({
    env: "METRICS_ROLLUP_LATENESS_MS",
    default: 300_000,
    min: 0,
    max: 86_400_000,
    description:
      "How far behind a tenant's newest sample a sample may arrive and still be rolled up; older ones stay raw only (counted)",
  }),
  rollupCloseIntervalMs: field.int({
    env: "METRICS_ROLLUP_CLOSE_INTERVAL_MS",
    default: 10_000,
    min: 100,
    max: 3_600_000,
    description:
      "How often the rollup builder merges the minutes its watermark closed into one row each and writes the hours it closed to the 1 h tier (Parquet)",
  }),
  rawRetentionMs: field.int({
    env: "METRICS_RAW_RETENTION_MS",
    default: 7 * 86_400_000,
    min: 3_600_000,
    max: 3_650 * 86_400_000,
    description: "MT-09: how long raw samples are kept (whole TSDB blocks older than this are deleted)",
  }),
  minuteRetentionMs: field.int({
    env: "METRICS_MINUTE_RETENTION_MS",
    default: 30 * 86_400_000,
    min: 3_600_000,
    max: 3_650 * 86_400_000,
    description: "MT-09: how long the 1 min tier is kept",
  }),
  hourRetentionMs: field.int({
    env: "METRICS_HOUR_RETENTION_MS",
    default: 365 * 86_400_000,
    min: 86_400_000,
    max: 36_500 * 86_400_000,
    description: "MT-09: how long the 1 h tier (the Parquet cold tier) is kept",
  }),
  retentionIntervalMs: field.int({
    env: "METRICS_RETENTION_INTERVAL_MS",
    default: 600_000,
    min: 1_000,
    max: 86_400_000,
    description: "Pause between two passes of the tier reaper",
  }),
  alertRuleFiles: field.string({
    env: "METRICS_ALERT_RULE_FILES",
    maxLength: 16_384,
    description:
      "Alerting rule files in Prometheus's format (comma-separated paths), evaluated off the stream; the built-in cardinality rule always runs",
  }),
  alertWebhookUrl: field.string({
    env: "METRICS_ALERT_WEBHOOK_URL",
    pattern: /^https?:\/\/\S+$/,
    maxLength: 2_048,
    description:
      "Where alert notifications are POSTed (Alertmanager's webhook body); unset = logged only (WEBHOOKS_URL wins)",
  }),
  webhooksUrl: field.url({
    env: "WEBHOOKS_URL",
    protocols: ["http:", "https:"],
    description:
      "The webhooks system's base URL: alert notifications are published there as events (metrics.alert.firing|resolved, the Alertmanager body as payload, an Idempotency-Key per alert and evaluation); unset = plain HTTP to METRICS_ALERT_WEBHOOK_URL",
  }),
  webhooksApiKey: field.string({
    env: "WEBHOOKS_API_KEY",
    secret: true,
    minLength: 8,
    maxLength: 512,
    description:
      "The webhooks tenant's API key (whk_…) alerts are published with; required with WEBHOOKS_URL",
  }),
  alertIntervalMs: field.int({
    env: "METRICS_ALERT_INTERVAL_MS",
    default: 15_000,
    min: 100,
    max: 3_600_000,
    description: "Evaluation interval of a rule group without its own `interval:`",
  }),
  alertResendMs: field.int({
    env: "METRICS_ALERT_RESEND_MS",
    default: 60_000,
    min: 1_000,
    max: 86_400_000,
    description:
      "A firing alert is notified again this often (Alertmanager forgets an alert not re-sent); the notification log keeps the replay plus this",
  }),
  alertReplayMs: field.int({
    env: "METRICS_ALERT_REPLAY_MS",
    default: 900_000,
    min: 60_000,
    max: 86_400_000,
    description:
      "How much of the stream a (re)started evaluator replays to rebuild rate() windows and for: state; also its window",
  }),
  scrapeTargets: field.string({
    env: "METRICS_SCRAPE_TARGETS",
    maxLength: 65_536,
    description:
      "Services whose /metrics the scraper reads, comma-separated job=url (cache=http://127.0.0.1:8114); casebook up lists every service it starts; unset = no scraping",
  }),
  scrapeIntervalMs: field.int({
    env: "METRICS_SCRAPE_INTERVAL_MS",
    default: 15_000,
    min: 100,
    max: 3_600_000,
    description: "Pause between two scrapes of every target (Prometheus's scrape_interval)",
  }),
  scrapeTimeoutMs: field.int({
    env: "METRICS_SCRAPE_TIMEOUT_MS",
    min: 50,
    max: 3_600_000,
    description:
      "Bound on one scrape, connect to last byte; at most the interval (scrape_timeout); unset = the interval, at most 10 s",
  }),
  scrapeMaxBodyBytes: field.int({
    env: "METRICS_SCRAPE_MAX_BODY_BYTES",
    default: 10 * 1024 * 1024,
    min: 1_024,
    max: 1024 * 1024 * 1024,
    description: "A larger /metrics body fails the scrape (body_size_limit)",
  }),
  scrapeSampleLimit: field.int({
    env: "METRICS_SCRAPE_SAMPLE_LIMIT",
    default: 50_000,
    min: 1,
    max: 10_000_000,
    description: "A target exposing more samples fails the scrape (sample_limit)",
  }),
  scrapeTenant: field.string({
    env: "METRICS_SCRAPE_TENANT",
    pattern: /^[A-Za-z0-9_-]{1,64}$/,
    description:
      'Tenant the scraped series belong to (created at start when absent); unset = the bootstrap tenant (so its printed key sees them), else "casebook"',
  }),
  scrapeApiKey: field.string({
    env: "METRICS_SCRAPE_API_KEY",
    secret: true,
    pattern: /^mtk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/,
    description:
      "A key of the scrape tenant, registered at start (casebook up makes one and gives it to the console, which reads its plots with it)",
  }),
  standardLabels: field.string({
    env: "METRICS_STANDARD_LABELS",
    pattern: STANDARD_LABELS_PATTERN,
    description: "MT-05: labels the ingest adds to every series that lacks them, e.g. region=eu,cluster=a",
  }),
  writeBodyLimitBytes: field.int({
    env: "METRICS_WRITE_BODY_LIMIT_BYTES",
    default: 10 * 1024 * 1024,
    min: 1_024,
    max: 256 * 1024 * 1024,
    description: "Largest remote-write or agent batch body, compressed",
  }),
  writeMaxDecodedBytes: field.int({
    env: "METRICS_WRITE_MAX_DECODED_BYTES",
    default: 64 * 1024 * 1024,
    min: 1_024,
    max: 1_024 * 1024 * 1024,
    description: "Largest batch once uncompressed (a snappy body declaring more is refused before decoding)",
  }),
  queryMaxSamples: field.int({
    env: "METRICS_QUERY_MAX_SAMPLES",
    default: 50_000_000,
    min: 1_000,
    max: 1_000_000_000,
    description: "Samples one query may load (Prometheus's query.max-samples)",
  }),
  lookbackMs: field.int({
    env: "METRICS_LOOKBACK_MS",
    default: 300_000,
    min: 1_000,
    max: 86_400_000,
    description: "How far back an instant selector looks for a series' newest sample (Prometheus: 5 m)",
  }),
  bootstrapTenant: field.string({
    env: "METRICS_BOOTSTRAP_TENANT",
    pattern: /^[A-Za-z0-9_-]{1,64}$/,
    description: `Tenant created with a printed API key on first start; "${BOOTSTRAP_OFF}" = none; unset = "${DEFAULT_BOOTSTRAP_TENANT}" on PGlite, none on PostgreSQL`,
  }),
  keyCacheTtlMs: field.durationMs({
    env: "METRICS_KEY_CACHE_TTL_MS",
    default: 5_000,
    min: 0,
    max: 60_000,
    description:
      "How long a verified API key is remembered in this process (saves two database queries per write or query); a key revoked through another process, or in the database, keeps working here up to this long; 0 = no cache",
  }),
  adminToken: field.string({
    env: "METRICS_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description: "Bearer token of /v1/admin/* (tenants and their API keys); unset = no admin API",
  }),
  ...logLevelField(),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

/** The settings, each field checked on its own, then across fields; a ConfigError names every problem. */
export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  const config = loadConfig(configSchema, { env });
  // WEBHOOKS_URL needs WEBHOOKS_API_KEY: the webhooks system takes no event without a tenant's key.
  const problems = webhooksConfigProblems(config);
  if (problems.length > 0) throw new ConfigError(problems);
  if (config.scrapeTimeoutMs !== undefined && config.scrapeTimeoutMs > config.scrapeIntervalMs) {
    throw errors.create("METRICS_CONFIG_INVALID", {
      detail: `METRICS_SCRAPE_TIMEOUT_MS=${config.scrapeTimeoutMs} is above METRICS_SCRAPE_INTERVAL_MS=${config.scrapeIntervalMs}: a scrape must end before the next one starts`,
      fields: { field: "METRICS_SCRAPE_TIMEOUT_MS" },
    });
  }
  try {
    parseScrapeTargets(config.scrapeTargets);
  } catch (error) {
    if (!(error instanceof ScrapeTargetError)) throw error;
    throw errors.create("METRICS_CONFIG_INVALID", {
      detail: error.message,
      fields: { field: "METRICS_SCRAPE_TARGETS", entry: error.entry },
    });
  }
  return config;
}

/** Prometheus's rule: scrape_timeout defaults to 10 s, or to the interval when that is shorter. */
export function scrapeTimeoutOf(config: Pick<SystemConfig, "scrapeTimeoutMs" | "scrapeIntervalMs">): number {
  return config.scrapeTimeoutMs ?? Math.min(10_000, config.scrapeIntervalMs);
}

/** `region=eu,cluster=a` → [["region","eu"],["cluster","a"]]. */
export function parseStandardLabels(text: string | undefined): Array<[string, string]> {
  if (text === undefined || text === "") return [];
  return text.split(",").map((pair) => pair.split("=", 2) as [string, string]);
}

/**
 * The agent process's settings (`casebook metrics agent`, `src/tools/metrics-agent.ts`): where
 * applications reach it, where it ships, its windows, buffers and cardinality guard.
 */
export const agentConfigSchema = {
  port: field.int({
    env: "METRICS_AGENT_PORT",
    default: 8125,
    min: 0,
    max: 65_535,
    description: "Loopback HTTP port applications send records to (0 = any free port)",
  }),
  host: field.string({
    env: "METRICS_AGENT_HOST",
    default: "127.0.0.1",
    description: "Interface to listen on",
  }),
  ingestUrl: field.string({
    env: "METRICS_AGENT_INGEST_URL",
    default: `http://127.0.0.1:${packageJson.casebook.port}`,
    pattern: /^https?:\/\/\S+$/,
    maxLength: 2_048,
    description: "The ingest (or the L4 front before several ingests): batches go to <url>/api/v1/write",
  }),
  apiKey: field.string({
    env: "METRICS_AGENT_API_KEY",
    required: true,
    secret: true,
    minLength: 8,
    maxLength: 256,
    description: "The tenant's API key (mtk_…) the agent writes with",
  }),
  windowMs: field.int({
    env: "METRICS_AGENT_WINDOW_MS",
    default: 10_000,
    min: 10,
    max: 3_600_000,
    description: "MT-02: aggregation window; one point per series per window",
  }),
  batchMs: field.int({
    env: "METRICS_AGENT_BATCH_MS",
    default: 5_000,
    min: 10,
    max: 600_000,
    description: "MT-03: how often closed windows are cut into a compressed batch and sent",
  }),
  retryCapMs: field.int({
    env: "METRICS_AGENT_RETRY_CAP_MS",
    default: 30_000,
    min: 10,
    max: 600_000,
    description: "Longest pause between tries while the ingest does not answer",
  }),
  memoryBytes: field.int({
    env: "METRICS_AGENT_MEMORY_BYTES",
    default: 8 * 1024 * 1024,
    min: 1,
    max: 4 * 1024 * 1024 * 1024,
    description: "MT-04: batches kept in memory; past it the oldest go to the disk spool",
  }),
  spoolDir: field.string({
    env: "METRICS_AGENT_SPOOL_DIR",
    maxLength: 4_096,
    description: "MT-04: the disk spool; unset = $CASEBOOK_DATA/metrics-agent-spool",
  }),
  spoolBytes: field.int({
    env: "METRICS_AGENT_SPOOL_BYTES",
    default: 256 * 1024 * 1024,
    min: 1,
    max: 1024 * 1024 * 1024 * 1024,
    description: "MT-04: the spool's bound; past it the oldest batches are dropped and counted",
  }),
  maxSeriesPerMetric: field.int({
    env: "METRICS_AGENT_MAX_SERIES_PER_METRIC",
    default: 1_000,
    min: 1,
    max: 10_000_000,
    description:
      "MT-15: series per metric the agent keeps; records of new series past it fold into the overflow series",
  }),
  maxSeries: field.int({
    env: "METRICS_AGENT_MAX_SERIES",
    default: 50_000,
    min: 1,
    max: 100_000_000,
    description: "MT-15: series the agent keeps in all (the same folding past it)",
  }),
  deniedLabels: field.string({
    env: "METRICS_AGENT_DENIED_LABELS",
    default: "user_id,userid,session_id,request_id,trace_id,email",
    pattern: /^([a-zA-Z_][a-zA-Z0-9_]*(,[a-zA-Z_][a-zA-Z0-9_]*)*)?$/,
    description: "MT-15: labels stripped from every record (comma-separated; empty = none)",
  }),
  ...logLevelField(),
};

export type AgentConfig = ConfigOf<typeof agentConfigSchema>;

export function loadAgentConfig(env: NodeJS.ProcessEnv): AgentConfig {
  return loadConfig(agentConfigSchema, { env });
}

/**
 * Composition root of metrics — metrics and observability platform (seed 000 §12): config →
 * database (tenants and hashed API keys; PGlite by default, PostgreSQL with DATABASE_URL) →
 * the per-tenant TSDB (head + WAL + blocks in METRICS_TSDB_DIR) → metrics → API (remote-write
 * and the agent's batch in, Prometheus's query API out) → listen, through infra's
 * `startService`, which closes what a failed start opened. Errors under /api/v1/ are in
 * Prometheus's shape (`api/prometheus-errors.ts`).
 *
 * @example
 * // PORT=8112 node systems/metrics/src/main.ts   (npx casebook run metrics runs it through the CLI)
 * const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
 * await fetch(`${running.url}/healthz`); // 200
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { dataDirFor } from "@casebook/infra/sql/open-database";
import { openStream } from "@casebook/infra/stream/open-stream";
import { systemClock } from "@casebook/kit/clock";
import packageJson from "../package.json" with { type: "json" };
import { prometheusErrorFormat } from "./api/prometheus-errors.ts";
import { registerApi } from "./api/register-api.ts";
import { AlertWebhook } from "./clients/alert-webhook.ts";
import {
  BOOTSTRAP_OFF,
  configSchema,
  DEFAULT_BOOTSTRAP_TENANT,
  loadSystemConfig,
  parseStandardLabels,
  type SystemConfig,
} from "./config.ts";
import { labelsFromPairs } from "./domain/labels.ts";
import { errors } from "./errors.ts";
import { createMetrics } from "./metrics.ts";
import { RollupStore } from "./store/rollup-store.ts";
import { loadRuleFiles } from "./store/rule-files.ts";
import { SampleStream } from "./store/sample-stream.ts";
import { TenantCache } from "./store/tenant-cache.ts";
import { TenantRepository } from "./store/tenant-repository.ts";
import { TenantTsdbs } from "./store/tenant-tsdbs.ts";
import { startAlertEvaluator } from "./workers/alert-evaluator.ts";
import { CardinalityReporter, cardinalityRules } from "./workers/cardinality-alert.ts";
import { startHotWriter } from "./workers/hot-writer.ts";
import { startRollupBuilder } from "./workers/rollup-builder.ts";
import { startTierReaper } from "./workers/tier-reaper.ts";

export const SYSTEM = "metrics";
export const VERSION = packageJson.version;
/** How long the hot writer trusts a tenant's ceilings read from the database (MT-16 changes apply within it). */
const TENANT_CACHE_TTL_MS = 5_000;
const MAX_CACHED_TENANTS = 10_000;

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly config: SystemConfig;
  /** The demo tenant created by THIS start (undefined when it existed already or is off). */
  readonly bootstrap: { tenantId: string; apiKey: string } | undefined;
  readonly tenants: TenantRepository;
  /** MT-07: the stream between the ingest and its consumers (undefined on the direct path). */
  readonly stream: SampleStream | undefined;
  close(): Promise<void>;
}

function bootstrapTenantOf(config: SystemConfig, engine: string): string | undefined {
  const chosen = config.bootstrapTenant ?? (engine === "pglite" ? DEFAULT_BOOTSTRAP_TENANT : undefined);
  return chosen === BOOTSTRAP_OFF ? undefined : chosen;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const { url, service, built } = await startService({
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors],
      errorFormats: [prometheusErrorFormat("/api/v1/")],
      openapi: {
        securitySchemes: bearerSecurityScheme("Tenant API key (mtk_…), as remote_write's authorization"),
      },
      description:
        "metrics and observability platform (seed 000 §12): remote-write in, Prometheus's query API out",
    },
    database: {
      system: SYSTEM,
      env,
      ...databaseOptionsOf(config),
      migrate: (db) => runMigrations(db, { dir: new URL("./store/migrations/", import.meta.url) }),
    },
    build: async ({ service, db }) => {
      const metrics = createMetrics(service.registry, { version: VERSION });
      const tenants = new TenantRepository(db, { clock: systemClock, randomBytes });
      const tsdbs = new TenantTsdbs({
        dir: config.tsdbDir ?? dataDirFor("metrics-tsdb", env),
        blockRangeMs: config.blockRangeMs,
        defaults: { maxSeries: config.maxSeries, maxSeriesPerMetric: config.maxSeriesPerMetric },
      });
      service.onClose(() => tsdbs.close());
      let stream: SampleStream | undefined;
      let streamClient: Awaited<ReturnType<typeof openStream>> | undefined;
      let rollups: RollupStore | undefined;
      if (config.ingestPath === "stream") {
        // MT-07: ingest → stream → hot writer (and the alert evaluator); close hooks run last-added first.
        const client = await openStream({ system: SYSTEM, url: config.natsUrl, env });
        streamClient = client;
        service.onClose(() => client.close());
        stream = new SampleStream(client, {
          partitions: config.partitions,
          retentionMs: config.streamRetentionMs,
          maxBytes: config.streamMaxBytes,
        });
        await stream.ensure();
      }
      // MT-05: an ingest-only process (METRICS_CONSUMERS=off) publishes; the consumers run elsewhere.
      if (stream !== undefined && streamClient !== undefined && config.consumers === "on") {
        const sampleStream = stream;
        const onError = (what: string) => (error: unknown) => service.log.error({ err: error }, what);
        const cardinality = new CardinalityReporter(
          sampleStream,
          systemClock,
          onError("cardinality report failed"),
        );
        const webhook = config.alertWebhookUrl
          ? new AlertWebhook({
              url: config.alertWebhookUrl,
              onFailed: (error, payload) =>
                service.log.error(
                  { err: error, alert: payload.groupLabels },
                  "alert notification not delivered",
                ),
            })
          : undefined;
        if (webhook) service.onClose(() => webhook.close());
        const evaluator = await startAlertEvaluator({
          client: streamClient,
          groups: [
            ...cardinalityRules(config.alertIntervalMs),
            ...(await loadRuleFiles(config.alertRuleFiles, config.alertIntervalMs)),
          ],
          clock: systemClock,
          replayMs: config.alertReplayMs,
          notify: (payload) => {
            metrics.alertNotifications.inc({
              alertname: payload.groupLabels.alertname ?? "",
              status: payload.status,
            });
            if (webhook) webhook.send(payload);
            else service.log.warn({ alert: payload }, "alert (no METRICS_ALERT_WEBHOOK_URL: logged only)");
          },
          onError: onError("alert evaluator failed"),
        });
        service.onClose(() => evaluator.stop());
        // A tenant per message would be a database round trip per message: its ceilings, cached.
        const tenantCache = new TenantCache((id) => tenants.find(id), {
          clock: systemClock,
          ttlMs: TENANT_CACHE_TTL_MS,
          maxTenants: MAX_CACHED_TENANTS,
        });
        const writer = await startHotWriter({
          client: streamClient,
          tsdbs,
          tenantOf: (id) => tenantCache.find(id),
          partitions: config.partitions,
          ackWaitMs: config.hotWriterAckWaitMs,
          onApplied: ({ tenant, samples }) => metrics.ingestedSamples.inc({ tenant }, samples),
          onLimited: (tenant, limited) => {
            metrics.refusedSeries.inc({ tenant }, limited.length);
            cardinality.report(tenant, limited);
          },
          onDropped: (event) => {
            metrics.droppedMessages.inc({ reason: event.reason.split(":")[0] ?? "other" });
            service.log.warn(event, "hot writer dropped a stream message");
          },
          onError: (error) => service.log.error({ err: error }, "hot writer round failed"),
        });
        service.onClose(() => writer.stop());
        // MT-07's third consumer: the 1 min tier (DuckDB) and the 1 h tier (Parquet) off the stream.
        const rollupStore = await RollupStore.open({
          dir: config.rollupDir ?? dataDirFor("metrics-rollups", env),
          latenessMs: config.rollupLatenessMs,
        });
        rollups = rollupStore;
        service.onClose(() => rollupStore.close());
        const builder = await startRollupBuilder({
          client: streamClient,
          store: rollupStore,
          closeIntervalMs: config.rollupCloseIntervalMs,
          onApplied: ({ tenant, late }) => {
            if (late > 0) metrics.lateRollupSamples.inc({ tenant }, late);
          },
          onDropped: (event) => service.log.warn(event, "rollup builder dropped a stream message"),
          onError: onError("rollup builder failed"),
        });
        service.onClose(() => builder.stop());
      }
      // MT-09/18: each tier past its retention is deleted.
      const reaper = startTierReaper({
        clock: systemClock,
        tsdbs,
        store: rollups,
        retention: {
          rawMs: config.rawRetentionMs,
          minuteMs: config.minuteRetentionMs,
          hourMs: config.hourRetentionMs,
        },
        intervalMs: config.retentionIntervalMs,
        onError: (error) => service.log.error({ err: error }, "tier reaper failed"),
      });
      service.onClose(() => reaper.stop());
      await registerApi(service.app, {
        db,
        clock: systemClock,
        randomBytes,
        tenants,
        tsdbs,
        metrics,
        adminToken: config.adminToken,
        settings: {
          standardLabels: labelsFromPairs(parseStandardLabels(config.standardLabels)),
          partitions: config.partitions,
          stream,
          tiers: {
            rollups,
            rawRetentionMs: config.rawRetentionMs,
            minuteRetentionMs: config.minuteRetentionMs,
            hourRetentionMs: config.hourRetentionMs,
          },
          writeBodyLimitBytes: config.writeBodyLimitBytes,
          writeMaxDecodedBytes: config.writeMaxDecodedBytes,
          lookbackMs: config.lookbackMs,
          queryMaxSamples: config.queryMaxSamples,
        },
      });
      const bootstrapId = bootstrapTenantOf(config, db.engine);
      const created =
        bootstrapId === undefined
          ? undefined
          : await tenants.createIfAbsent({ id: bootstrapId, name: bootstrapId });
      const bootstrap = created && { tenantId: created.tenant.id, apiKey: created.apiKey.key };
      return { bootstrap, tenants, stream };
    },
    listen: { port: config.port, host: config.host },
    listening: (_built, { db }) => ({ engine: db.engine }),
    announce: ({ bootstrap }, { service, url }) => {
      if (!bootstrap) return;
      const hint = `curl -s -H 'Authorization: Bearer ${bootstrap.apiKey}' '${url}/api/v1/query?query=up'`;
      service.log.info(
        { ...bootstrap, try: hint },
        "bootstrap tenant created: its API key is shown only now",
      );
    },
  });
  return {
    url,
    service,
    config,
    bootstrap: built.bootstrap,
    tenants: built.tenants,
    stream: built.stream,
    close: () => service.close(),
  };
}

if (import.meta.main) {
  await runServiceEntry({
    name: SYSTEM,
    summary: "metrics and observability platform (seed 000 §12)",
    schema: configSchema,
    usage: [`npx casebook run ${SYSTEM}`, `node systems/${SYSTEM}/src/main.ts`],
    notes: `The API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => (await main()).service,
  });
}

/**
 * Composition root of metrics — metrics and observability platform (seed 000 §12): config →
 * database (tenants and hashed API keys; PGlite by default, PostgreSQL with DATABASE_URL) →
 * the per-tenant TSDB (head + WAL + blocks in METRICS_TSDB_DIR) → metrics → the scraper of
 * METRICS_SCRAPE_TARGETS → API (remote-write and the agent's batch in, Prometheus's query API
 * out) → listen, through infra's
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
import {
  ownUrl,
  registerScenarioRoutes,
  ScenarioRuns,
  scenarioErrors,
} from "@casebook/infra/http/scenario-runs";
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
import { AlertWebhooksPublisher } from "./clients/alert-webhooks-publisher.ts";
import {
  BOOTSTRAP_OFF,
  configSchema,
  DEFAULT_BOOTSTRAP_TENANT,
  DEFAULT_SCRAPE_TENANT,
  loadSystemConfig,
  parseStandardLabels,
  type SystemConfig,
  scrapeTimeoutOf,
} from "./config.ts";
import { labelsFromPairs } from "./domain/labels.ts";
import { parseScrapeTargets } from "./domain/scrape-target.ts";
import { errors } from "./errors.ts";
import { createMetrics } from "./metrics.ts";
import { cardinalityExplosionScenario } from "./scenarios/cardinality-explosion-scenario.ts";
import { AlertLog } from "./store/alert-log.ts";
import { RollupStore } from "./store/rollup-store.ts";
import { loadRuleFiles } from "./store/rule-files.ts";
import { SampleIngest } from "./store/sample-ingest.ts";
import { SampleStream } from "./store/sample-stream.ts";
import { DEFAULT_PARTITIONS, streamPartitions } from "./store/stream-layout.ts";
import { TenantCache } from "./store/tenant-cache.ts";
import { TenantRepository } from "./store/tenant-repository.ts";
import { TenantTsdbs } from "./store/tenant-tsdbs.ts";
import { type AlertEvaluator, startAlertEvaluator } from "./workers/alert-evaluator.ts";
import { CardinalityReporter, cardinalityRules } from "./workers/cardinality-alert.ts";
import { startHotWriter } from "./workers/hot-writer.ts";
import { startRollupBuilder } from "./workers/rollup-builder.ts";
import { Scraper } from "./workers/scraper.ts";
import { startTierReaper } from "./workers/tier-reaper.ts";

export const SYSTEM = "metrics";
export const VERSION = packageJson.version;
/** A stream message the TSDB refused for its order: its samples count as refused `out_of_order`. */
const OUT_OF_ORDER_REASONS = new Set(["OUT_OF_ORDER", "DUPLICATE_TIMESTAMP", "TOO_OLD"]);
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

/** Where notifications go: the webhooks system with WEBHOOKS_URL, else plain HTTP, else nowhere (logged). */
function alertSinkOf(
  config: SystemConfig,
  hooks: {
    onDuplicate: () => void;
    onDropped: () => void;
    onFailed: (error: unknown, alert: Record<string, string>) => void;
  },
): AlertWebhook | AlertWebhooksPublisher | undefined {
  if (config.webhooksUrl !== undefined && config.webhooksApiKey !== undefined) {
    return new AlertWebhooksPublisher({
      url: config.webhooksUrl,
      apiKey: config.webhooksApiKey,
      onPublished: (_event, duplicate) => {
        if (duplicate) hooks.onDuplicate();
      },
      onFailed: (error, event) => hooks.onFailed(error, event.payload.alerts[0]?.labels ?? {}),
      onDropped: hooks.onDropped,
    });
  }
  if (config.alertWebhookUrl === undefined) return undefined;
  return new AlertWebhook({
    url: config.alertWebhookUrl,
    onFailed: (error, payload) => hooks.onFailed(error, payload.groupLabels),
    onDropped: hooks.onDropped,
  });
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
      errors: [errors, scenarioErrors],
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
      const tenants = new TenantRepository(db, { clock: systemClock, randomBytes });
      const tsdbs = new TenantTsdbs({
        dir: config.tsdbDir ?? dataDirFor("metrics-tsdb", env),
        blockRangeMs: config.blockRangeMs,
        defaults: { maxSeries: config.maxSeries, maxSeriesPerMetric: config.maxSeriesPerMetric },
      });
      let evaluator: AlertEvaluator | undefined;
      const metrics = createMetrics(
        service.registry,
        { version: VERSION },
        {
          seriesByTenant: () => tsdbs.seriesByTenant(),
          alertStates: () => evaluator?.alerts().map((a) => a.state) ?? [],
        },
      );
      service.onClose(() => tsdbs.close());
      let stream: SampleStream | undefined;
      let streamClient: Awaited<ReturnType<typeof openStream>> | undefined;
      let rollups: RollupStore | undefined;
      // MT-06: the stream's own count when there is a stream (kept with it: stream-layout.ts).
      let partitions = config.partitions ?? DEFAULT_PARTITIONS;
      if (config.ingestPath === "stream") {
        // MT-07: ingest → stream → hot writer (and the alert evaluator); close hooks run last-added first.
        const client = await openStream({ system: SYSTEM, url: config.natsUrl, env });
        streamClient = client;
        service.onClose(() => client.close());
        partitions = await streamPartitions(client, { configured: config.partitions });
        stream = new SampleStream(client, {
          partitions,
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
        const sink = alertSinkOf(config, {
          onDuplicate: () => metrics.alertDuplicates.inc(),
          onDropped: () => metrics.alertNotificationsDropped.inc(),
          onFailed: (error, alert) =>
            service.log.error({ err: error, alert }, "alert notification not delivered"),
        });
        if (sink) service.onClose(() => sink.close());
        const started = await startAlertEvaluator({
          client: streamClient,
          groups: [
            ...cardinalityRules(config.alertIntervalMs),
            ...(await loadRuleFiles(config.alertRuleFiles, config.alertIntervalMs)),
          ],
          clock: systemClock,
          replayMs: config.alertReplayMs,
          log: new AlertLog(streamClient, { windowMs: config.alertReplayMs + config.alertResendMs }),
          resendMs: config.alertResendMs,
          notify: (notification) => {
            metrics.alertNotifications.inc({
              alertname: notification.alertname,
              status: notification.payload.status,
            });
            if (sink) sink.send(notification);
            else
              service.log.warn(
                { alert: notification.payload },
                "alert (no WEBHOOKS_URL nor METRICS_ALERT_WEBHOOK_URL: logged only)",
              );
          },
          onEvaluated: ({ ruleEvaluations }) => metrics.ruleEvaluations.inc(ruleEvaluations),
          onError: onError("alert evaluator failed"),
        });
        evaluator = started;
        service.onClose(() => started.stop());
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
          partitions,
          ackWaitMs: config.hotWriterAckWaitMs,
          onApplied: ({ tenant, samples, refusedSamples, storedAtMs }) => {
            metrics.ingestedSamples.inc({ tenant }, samples);
            if (refusedSamples > 0)
              metrics.refusedSamples.inc({ tenant, reason: "series_limit" }, refusedSamples);
            metrics.hotWriterLag.observe(Math.max(0, systemClock.nowMs() - storedAtMs) / 1_000);
          },
          onLimited: (tenant, limited) => {
            metrics.refusedSeries.inc({ tenant }, limited.length);
            cardinality.report(tenant, limited);
          },
          onDropped: (event) => {
            const reason = event.reason.split(":")[0] ?? "other";
            metrics.droppedMessages.inc({ reason });
            if (OUT_OF_ORDER_REASONS.has(reason))
              metrics.refusedSamples.inc({ tenant: event.tenant, reason: "out_of_order" }, event.samples);
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
      const standardLabels = labelsFromPairs(parseStandardLabels(config.standardLabels));
      let scraper: Scraper | undefined;
      const scrapeTimeoutMs = scrapeTimeoutOf(config);
      const bootstrapId = bootstrapTenantOf(config, db.engine);
      const scrapeTenantId = config.scrapeTenant ?? bootstrapId ?? DEFAULT_SCRAPE_TENANT;
      await registerApi(service.app, {
        db,
        clock: systemClock,
        randomBytes,
        tenants,
        tsdbs,
        metrics,
        adminToken: config.adminToken,
        scrape: {
          scrapeTenant: scrapeTenantId,
          states: () => scraper?.states() ?? [],
          intervalMs: config.scrapeIntervalMs,
          timeoutMs: scrapeTimeoutMs,
        },
        settings: {
          standardLabels,
          partitions,
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
          keyCacheTtlMs: config.keyCacheTtlMs,
        },
      });
      // The console's scenario (issues 22, 23), loopback only: a tenant of its own per run.
      const alertsOf = evaluator;
      const scenarios = new ScenarioRuns([
        cardinalityExplosionScenario({
          tenants,
          baseUrl: () => ownUrl(service.app),
          alerts: alertsOf === undefined ? undefined : () => alertsOf.alerts(),
          alertIntervalMs: config.alertIntervalMs,
        }),
      ]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      const created =
        bootstrapId === undefined
          ? undefined
          : await tenants.createIfAbsent({ id: bootstrapId, name: bootstrapId });
      const bootstrap = created && { tenantId: created.tenant.id, apiKey: created.apiKey.key };
      // Issue 22: every Casebook service's /metrics, scraped through the same ingest into the scrape
      // tenant — by default the bootstrap tenant, created just above so its first key is the one printed.
      const scrapeTargets = parseScrapeTargets(config.scrapeTargets);
      if (scrapeTargets.length > 0 || config.scrapeApiKey !== undefined)
        await tenants.ensureWithKey(scrapeTenantId, config.scrapeApiKey);
      const scrapeTenant = await tenants.find(scrapeTenantId);
      scraper =
        scrapeTargets.length === 0 || scrapeTenant === undefined
          ? undefined
          : new Scraper({
              targets: scrapeTargets,
              tenant: scrapeTenant,
              ingest: new SampleIngest({
                tsdbs,
                metrics,
                standardLabels,
                partitions,
                stream,
              }),
              clock: systemClock,
              intervalMs: config.scrapeIntervalMs,
              timeoutMs: scrapeTimeoutMs,
              maxBodyBytes: config.scrapeMaxBodyBytes,
              maxSamples: config.scrapeSampleLimit,
              onScraped: (target, { ok, staleMarkers }) => {
                metrics.scrapes.inc({ job: target.job, result: ok ? "ok" : "failed" });
                if (staleMarkers > 0) metrics.scrapeStaleMarkers.inc({ job: target.job }, staleMarkers);
              },
              onError: (error, target) =>
                service.log.warn({ err: error, job: target?.job }, "a scrape's samples were not stored"),
            });
      if (scraper !== undefined) {
        const started = scraper;
        started.start();
        service.onClose(() => started.stop());
      }
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

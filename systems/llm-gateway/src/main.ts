/**
 * Composition root of llm-gateway — LLM inference gateway (seed 000 §11): config → database
 * (tenants and hashed API keys; PGlite by default, PostgreSQL with DATABASE_URL) → the
 * upstream provider (LLM_GATEWAY_UPSTREAM_URL, or the provider simulator in-process) →
 * metrics → API → listen, through infra's `startService`, which closes what a failed start
 * opened. Stateless (LG-14): its state lives in its engines, so replicas are more processes.
 * Errors on the OpenAI-compatible routes are in OpenAI's shape (`api/error-formats.ts`).
 *
 * @example
 * // PORT=8111 node systems/llm-gateway/src/main.ts   (npx casebook run llm-gateway runs it through the CLI)
 * const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
 * await fetch(`${running.url}/healthz`); // 200
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { systemClock } from "@casebook/kit/clock";
import { VerifiedKeyCache } from "@casebook/kit/verified-key-cache";
import packageJson from "../package.json" with { type: "json" };
import { llmErrorFormats } from "./api/error-formats.ts";
import { registerApi } from "./api/register-api.ts";
import { SemanticCache } from "./api/semantic-cache.ts";
import { StreamShutdown } from "./api/stream-shutdown.ts";
import { Destinations } from "./clients/destinations.ts";
import { UpstreamClient } from "./clients/upstream-client.ts";
import { UpstreamEmbedder } from "./clients/upstream-embedder.ts";
import {
  BOOTSTRAP_OFF,
  configSchema,
  DEFAULT_BOOTSTRAP_TENANT,
  loadSystemConfig,
  type SystemConfig,
} from "./config.ts";
import { type Embedder, lexicalEmbedder } from "./domain/embedder.ts";
import { DEFAULT_DESTINATION, parseDestinationList, parseModelList, wireOf } from "./domain/model-catalog.ts";
import { parsePriceList } from "./domain/pricing.ts";
import { errors } from "./errors.ts";
import { createMetrics } from "./metrics.ts";
import { providerDegradationScenario } from "./scenarios/provider-degradation-scenario.ts";
import { createProviderSim } from "./sim/provider-sim.ts";
import { openInProcessBudgetStore, openRedisBudgetStore } from "./store/budget-store.ts";
import { SemanticCacheStore } from "./store/semantic-cache-store.ts";
import {
  DEFAULT_CACHE_WRITE_BATCH,
  DEFAULT_CACHE_WRITE_MAX_PENDING,
  SemanticCacheWriter,
} from "./store/semantic-cache-writer.ts";
import { TenantRepository, tenantKeys as tenantApiKeys } from "./store/tenant-repository.ts";
import { UsageRepository } from "./store/usage-repository.ts";
import { DEFAULT_USAGE_WRITE_ATTEMPTS, UsageWriter } from "./store/usage-writer.ts";

/** API keys remembered at once per replica (≈ 300 bytes each). */
const MAX_CACHED_KEYS = 10_000;
/**
 * Embedded PGlite runs on a worker thread of its own: its WASM is synchronous, and on the main
 * thread a batch of usage rows or a semantic-cache scan held every open stream's relay for its
 * length (at 500 streams, ~0.9 ms of the loop per stream and the p99's stalls). Calls waiting on
 * that thread at once, past which one answers 503 SQL_UNAVAILABLE.
 */
const DATABASE_MAX_PENDING = 1_024;

export const SYSTEM = "llm-gateway";
export const VERSION = packageJson.version;

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly config: SystemConfig;
  readonly upstreamUrl: string;
  /** The demo tenant created by THIS start (undefined when it existed already or is off). */
  readonly bootstrap: { tenantId: string; apiKey: string } | undefined;
  close(): Promise<void>;
}

/** The provider's base URL: the configured one, or the simulator started here (closed with the service). */
async function upstreamFor(config: SystemConfig, service: Service): Promise<string> {
  if (config.upstreamUrl !== undefined) return config.upstreamUrl;
  const sim = createProviderSim({ log: service.log.child({ component: "llm-provider-sim" }) });
  const { url } = await sim.listen({ port: 0 });
  service.onClose(() => sim.close());
  return `${url}/v1`;
}

/** LG-11's embedder: the upstream's /v1/embeddings when a model is configured, else the local lexical one. */
function embedderFor(
  config: SystemConfig,
  upstreamUrl: string,
  upstreamOf: (url: string) => UpstreamClient,
  service: Service,
): Embedder {
  if (config.embeddingsModel === undefined) return lexicalEmbedder;
  const client = upstreamOf(config.embeddingsUrl ?? upstreamUrl);
  service.onClose(async () => client.close());
  return new UpstreamEmbedder(client, {
    model: config.embeddingsModel,
    dimensions: config.embeddingsDimensions,
    timeoutMs: config.embeddingsTimeoutMs,
  });
}

function bootstrapTenantOf(config: SystemConfig, engine: string): string | undefined {
  const chosen = config.bootstrapTenant ?? (engine === "pglite" ? DEFAULT_BOOTSTRAP_TENANT : undefined);
  return chosen === BOOTSTRAP_OFF ? undefined : chosen;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const catalog = parseModelList(config.models);
  const { url, service, built } = await startService({
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors, scenarioErrors],
      errorFormats: llmErrorFormats,
      drainTimeoutMs: config.drainTimeoutMs,
      openapi: {
        securitySchemes: bearerSecurityScheme("Tenant API key (llm_…), as the OpenAI SDK's apiKey"),
      },
      description:
        "LLM inference gateway (seed 000 §11): OpenAI-compatible, streams without buffering, cancels upstream when the client leaves",
    },
    database: {
      system: SYSTEM,
      env,
      ...databaseOptionsOf(config),
      pgliteThread: { maxPending: DATABASE_MAX_PENDING },
      migrate: (db) => runMigrations(db, { dir: new URL("./store/migrations/", import.meta.url) }),
    },
    build: async ({ service, db }) => {
      let destinations: Destinations | undefined;
      const metrics = createMetrics(
        service.registry,
        { version: VERSION },
        () => destinations?.snapshot() ?? [],
      );
      const upstreamUrl = await upstreamFor(config, service);
      const upstreamOf = (destinationUrl: string) =>
        new UpstreamClient({
          baseUrl: wireOf(destinationUrl).url,
          wire: wireOf(destinationUrl).wire,
          defaultMaxTokens: config.maxOutputTokens,
          apiKey: config.upstreamApiKey,
          timeouts: {
            connectMs: config.upstreamConnectMs,
            headersMs: config.upstreamHeadersMs,
            bodyMs: config.generationTimeoutMs,
          },
          idleMs: config.upstreamIdleMs,
          maxSockets: 1_024,
        });
      const upstreams = new Map([[DEFAULT_DESTINATION, upstreamOf(upstreamUrl)]]);
      for (const [name, url] of parseDestinationList(config.destinations))
        upstreams.set(name, upstreamOf(url));
      destinations = new Destinations({
        catalog,
        upstreams,
        clock: systemClock,
        breaker: {
          ttftMs: config.breakerTtftMs,
          failureThreshold: config.breakerFailures,
          failureRatePercent: config.breakerFailureRatePercent,
          openDurationMs: config.breakerOpenMs,
        },
        onOutcome: (deployment, outcome) =>
          metrics.breakerOutcomes.inc({ deployment: deployment.id, outcome }),
        onStateChange: (deployment, to, reason) => {
          metrics.breakerTransitions.inc({ deployment: deployment.id, to, reason });
          const log = service.log.child({ component: "breaker" });
          (to === "closed" ? log.info : log.warn).call(
            log,
            { deployment: deployment.id, to, reason },
            "breaker changed state",
          );
        },
      });
      const routing = destinations;
      service.onClose(async () => routing.close());
      const tenants = new TenantRepository(db, { clock: systemClock, randomBytes });
      // Plain proxying's hot path does no database work: keys checked from memory (a short
      // TTL is the revocation bound), usage rows written in batches after the answer.
      const tenantKeys = new VerifiedKeyCache(
        {
          parse: (key) => tenantApiKeys.scheme.parse(key),
          verify: (presented) => tenants.authenticatePresented(presented),
        },
        { clock: systemClock, ttlMs: config.keyCacheTtlMs, maxEntries: MAX_CACHED_KEYS },
      );
      // Keys in use are re-checked in the background before their entries expire (no request waits).
      service.onClose(tenantKeys.startRefreshing());
      const usageLog = service.log.child({ component: "usage-writer" });
      const usage = new UsageWriter(new UsageRepository(db, { clock: systemClock }), {
        maxBatch: config.usageBatch,
        maxPending: config.usageMaxPending,
        maxWaitMs: config.usageFlushMs,
        attempts: DEFAULT_USAGE_WRITE_ATTEMPTS,
        nowMs: () => systemClock.nowMs(),
        onWritten: (count) => metrics.usageRows.inc({ result: "written" }, count),
        onBackpressure: () => metrics.usageRows.inc({ result: "direct" }),
        onLost: (rows, error) => {
          metrics.usageRows.inc({ result: "lost" }, rows.length);
          for (const row of rows)
            usageLog.error({ err: error, usage: row }, "usage row lost after every attempt");
        },
      });
      // Added before the routes' hooks, so it runs after them (last-added first) and before the pool closes.
      service.onClose(() => usage.drain());
      const budgetStore =
        config.redisUrl === undefined
          ? await openInProcessBudgetStore({ clock: systemClock })
          : await openRedisBudgetStore({
              url: config.redisUrl,
              commandTimeoutMs: config.redisCommandTimeoutMs,
            });
      service.onClose(() => budgetStore.close());
      service.addCheck("redis", () => budgetStore.ping());
      const tenantDefaults = { rpm: config.tenantRpm, tpm: config.tenantTpm };
      const cacheStore = new SemanticCacheStore(db, { clock: systemClock });
      const cacheWriter = new SemanticCacheWriter(cacheStore, {
        maxBatch: DEFAULT_CACHE_WRITE_BATCH,
        maxPending: DEFAULT_CACHE_WRITE_MAX_PENDING,
      });
      // Like the usage rows': the entries handed over are written before the pool closes.
      service.onClose(() => cacheWriter.drain());
      const cache = config.cache
        ? new SemanticCache(
            { lookups: cacheStore, writer: cacheWriter },
            {
              enabled: true,
              threshold: config.cacheThreshold,
              ttlMs: config.cacheTtlMs,
              maxLookups: config.cacheMaxLookups,
              lookupQueue: config.cacheLookupQueue,
              lookupWaitMs: config.cacheLookupWaitMs,
            },
            metrics,
            embedderFor(config, upstreamUrl, upstreamOf, service),
          )
        : undefined;
      await registerApi(service.app, {
        db,
        clock: systemClock,
        randomBytes,
        tenants,
        tenantKeys,
        catalog,
        destinations: routing,
        cache,
        accounting: {
          prices: parsePriceList(config.prices),
          usage,
          spendWindowMs: config.spendWindowMs,
        },
        metrics,
        settings: {
          maxOutputTokens: config.maxOutputTokens,
          keepAliveMs: config.keepAliveMs,
          generationTimeoutMs: config.generationTimeoutMs,
        },
        adminToken: config.adminToken,
        tenantDefaults,
        streamShutdown: new StreamShutdown(),
        drainTimeoutMs: config.drainTimeoutMs,
        budgets: {
          store: budgetStore,
          enabled: config.budgets,
          windowMs: config.budgetWindowMs,
          failMode: config.budgetFailMode,
          onUnmetered: (what, error) => {
            metrics.unmetered.inc({ budget: what });
            service.log.warn(
              { err: error, budget: what },
              "counter unreachable: request let through unmetered (fail open)",
            );
          },
          limits: {
            modelRpm: config.modelRpm,
            modelTpm: config.modelTpm,
            destinationRpm: config.destinationRpm,
            destinationTpm: config.destinationTpm,
          },
        },
      });
      // The console's scenario (loopback only): a private simulator and gateway of its own.
      const scenarios = new ScenarioRuns([providerDegradationScenario({ startGateway: (env) => main(env) })]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      const bootstrapId = bootstrapTenantOf(config, db.engine);
      const created =
        bootstrapId === undefined
          ? undefined
          : await tenants.createIfAbsent({ id: bootstrapId, name: bootstrapId, ...tenantDefaults });
      const bootstrap = created && { tenantId: created.tenant.id, apiKey: created.apiKey.key };
      return { upstreamUrl, bootstrap, budgets: budgetStore.engine };
    },
    listen: { port: config.port, host: config.host },
    listening: ({ upstreamUrl, budgets }, { db }) => ({ engine: db.engine, budgets, upstreamUrl }),
    announce: ({ bootstrap }, { service, url }) => {
      if (!bootstrap) return;
      const hint = `curl -s -H 'Authorization: Bearer ${bootstrap.apiKey}' ${url}/v1/models`;
      service.log.info(
        { ...bootstrap, try: hint },
        "bootstrap tenant created: its API key is shown only now",
      );
    },
  });
  const { upstreamUrl, bootstrap } = built;
  return { url, service, config, upstreamUrl, bootstrap, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: SYSTEM,
    summary: "LLM inference gateway (seed 000 §11)",
    schema: configSchema,
    usage: [`npx casebook run ${SYSTEM}`, `node systems/${SYSTEM}/src/main.ts`],
    notes: `Tools: npx casebook llm-gateway provider-sim.\nThe API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => (await main()).service,
  });
}

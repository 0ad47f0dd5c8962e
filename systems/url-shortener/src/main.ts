/**
 * Composition root of url-shortener — global URL shortener (seed 000 §9): config → database
 * (PostgreSQL or embedded PGlite) and migrations → the code source (the shared counter in SQL,
 * or Redis INCRBY with REDIS_URL; the stored permutation key) → the read path (LRU over the
 * store) → the API (links, admin, the redirect) → the reaper → graceful shutdown. Stateless:
 * run as many replicas as you like against one DATABASE_URL; each takes its own blocks.
 *
 * @example
 * // PORT=8109 node systems/url-shortener/src/main.ts   (npx casebook run url-shortener runs it through the CLI)
 * const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
 * running.bootstrap?.apiKey; // "usk_…": the demo workspace's key, on first start only
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { type IdempotencyStore, PRUNE_MAX_BATCH } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { type Clock, systemClock } from "@casebook/kit/clock";
import packageJson from "../package.json" with { type: "json" };
import { registerAnalyticsRoutes } from "./api/analytics-routes.ts";
import type { CodeSource, ReadPath } from "./api/api-context.ts";
import { domainOf } from "./api/api-context.ts";
import { CreateLimiter } from "./api/create-limiter.ts";
import { installRedirectFastPath } from "./api/redirect-fast-path.ts";
import { registerApi } from "./api/register-api.ts";
import { configSchema, loadSystemConfig, type SystemConfig } from "./config.ts";
import { CODE_SPACE } from "./domain/base62.ts";
import { ClickBuffer } from "./domain/click-buffer.ts";
import { BlockAllocator, type CounterPort } from "./domain/counter-blocks.ts";
import { CounterCodes } from "./domain/counter-codes.ts";
import { FeistelPermutation } from "./domain/feistel-permutation.ts";
import { localListVerifier } from "./domain/target-verifier.ts";
import { noVisits } from "./domain/visit.ts";
import { errors } from "./errors.ts";
import { createMetrics, type SystemMetrics } from "./metrics.ts";
import type { MainOptions, RunningSystem } from "./running-system.ts";
import { edgeOnOffScenario } from "./scenarios/edge-on-off-scenario.ts";
import { CachedLinkReader } from "./store/cached-link-reader.ts";
import { type ClickDatabase, openClickDatabase } from "./store/click-database.ts";
import { ClickStore } from "./store/click-store.ts";
import { shortenerIdempotency, shortenerIdempotencyStore } from "./store/idempotency-keys.ts";
import { LinkRepository } from "./store/link-repository.ts";
import { migrateShortenerStore } from "./store/migrate.ts";
import { loadPermutationKey, VISITORS_KEY } from "./store/permutation-key.ts";
import { RedisCounter } from "./store/redis-counter.ts";
import { SqlCounter } from "./store/sql-counter.ts";
import { anyWorkspace, createWorkspaceIfAbsent } from "./store/workspace-repository.ts";
import { WorkerClickEncoder } from "./workers/click-encoder.ts";
import { ClickFlusher } from "./workers/click-flusher.ts";
import { ClickRollup } from "./workers/click-rollup.ts";
import { EdgeLogIngester } from "./workers/edge-log-ingester.ts";
import { EdgePurger } from "./workers/edge-purger.ts";
import { LinkReaper } from "./workers/link-reaper.ts";

export type { MainOptions, RunningSystem } from "./running-system.ts";

export const SYSTEM = "url-shortener";
export const VERSION = packageJson.version;
/** The demo workspace made on an embedded database with no admin API, so `npm start` can be tried at once. */
export const DEMO_WORKSPACE = "demo";
/** Keys whose creation budgets are tracked at once (create-limiter.ts). */
const MAX_LIMITED_KEYS = 10_000;
/**
 * On the embedded PGlite the service's own database runs on a worker thread too (infra's
 * pglite-thread-database.ts), as the click log does: a PGlite in the redirect's process slows
 * a bare node:http 302 by ~14% even idle (issue 18's profile). Calls waiting on that thread at
 * once, past which one answers 503 SQL_UNAVAILABLE.
 */
const SERVICE_DATABASE_MAX_PENDING = 1_024;
const REAP_BATCH = 1_000;
/** A batch's encoding on the worker thread takes milliseconds; past this the worker is restarted and the batch waits. */
const CLICK_ENCODE_TIMEOUT_MS = 30_000;

/** The shared counter: Redis INCRBY when REDIS_URL is set (started from the SQL value), else the SQL row. */
async function counterOf(config: SystemConfig, db: Database, service: Service): Promise<CounterPort> {
  const sql = new SqlCounter(db);
  if (config.redisUrl === undefined) return sql;
  const redis = await connectRedis({ url: config.redisUrl });
  service.onClose(() => closeRedis(redis));
  const counter = new RedisCounter(redis, `${SYSTEM}:counter:links`);
  await counter.start(await sql.current());
  return counter;
}

async function codeSourceOf(
  config: SystemConfig,
  db: Database,
  service: Service,
  clock: Clock,
): Promise<CodeSource> {
  const key = await loadPermutationKey(db, { randomBytes, nowMs: clock.nowMs() });
  const blocks = new BlockAllocator({ counter: await counterOf(config, db, service), limit: CODE_SPACE });
  return new CounterCodes(blocks, new FeistelPermutation(key));
}

function readPathOf(
  config: SystemConfig,
  links: LinkRepository,
  metrics: SystemMetrics,
  clock: Clock,
): ReadPath {
  if (config.cacheMaxEntries === 0)
    return { resolve: (domain, code) => links.resolve(domain, code), forget() {} };
  const hits = metrics.readCacheTallies.of("hit");
  const misses = metrics.readCacheTallies.of("miss");
  return new CachedLinkReader(links, {
    maxEntries: config.cacheMaxEntries,
    maxBytes: config.cacheMaxBytes,
    ttlMs: config.cacheTtlMs,
    clock,
    onLookup: (hit) => (hit ? hits : misses).inc(),
  });
}

function startReaper(
  config: SystemConfig,
  links: LinkRepository,
  service: Service,
  metrics: SystemMetrics,
  clock: Clock,
) {
  const reaper = new LinkReaper({
    links,
    clock,
    intervalMs: config.reapIntervalMs,
    maxBatch: REAP_BATCH,
    onError: (err) => service.log.warn({ err }, "link reaper round failed; retrying"),
    onReaped: (count) => metrics.linksReaped.inc(count),
  });
  reaper.start();
  service.onClose(() => reaper.stop());
}

/** Idempotency keys answer for a day (the store's retention); past it this loop deletes them, a batch at a time. */
function startIdempotencyPruner(store: IdempotencyStore, config: SystemConfig, service: Service) {
  const loop = new BackgroundLoop({
    name: "idempotency pruner",
    round: async () => (await store.prune({ maxBatch: PRUNE_MAX_BATCH })) === PRUNE_MAX_BATCH,
    idleMs: config.reapIntervalMs,
    failureBackoff: { capMs: Math.max(config.reapIntervalMs, 60_000), jitter: "none" },
    onError: (err) => service.log.warn({ err }, "idempotency key prune failed; retrying"),
  });
  loop.start();
  service.onClose(() => loop.stop());
}

/** The read path the API edits through: forgetting a link drops it from this LRU, then purges the edge. */
function purgingReadPath(
  reader: ReadPath,
  config: SystemConfig,
  service: Service,
  metrics: SystemMetrics,
): ReadPath {
  if (config.edgePurgeUrl === undefined) return reader;
  const log = service.log;
  const purger = new EdgePurger({
    url: config.edgePurgeUrl,
    onPurge: (outcome, detail) => {
      metrics.edgePurges.inc({ outcome });
      if (outcome === "failed")
        log.warn(
          { err: detail.error, domain: detail.domain, code: detail.code, status: detail.status },
          "edge purge failed: the link's max-age bounds what the edge serves",
        );
    },
  });
  service.onClose(() => purger.close());
  return {
    resolve: (domain, code) => reader.resolve(domain, code),
    ...(reader.peek ? { peek: reader.peek.bind(reader) } : {}),
    forget: async (domain, code) => {
      await reader.forget(domain, code);
      await purger.purge(domain, code);
    },
  };
}

function startEdgeIngester(
  config: SystemConfig,
  db: Database,
  service: Service,
  metrics: SystemMetrics,
  key: Uint8Array,
): EdgeLogIngester | undefined {
  if (config.edgeAccessLog === undefined) return undefined;
  const [fallback] = config.domains;
  const ingester = new EdgeLogIngester({
    db,
    path: config.edgeAccessLog,
    key,
    domainOf: (host) => (domainOf(config.domains, host) ?? fallback!).host,
    intervalMs: config.edgeIngestIntervalMs,
    onError: (err) => service.log.warn({ err }, "edge log ingest failed; the position is kept, retrying"),
    onIngested: (lines, skipped) => {
      metrics.edgeClicksIngested.inc(lines);
      if (skipped > 0) metrics.edgeLinesSkipped.inc(skipped);
    },
  });
  ingester.start();
  return ingester;
}

/**
 * The click pipeline (US-15): the redirect's sink is the bounded buffer; the flusher writes it
 * to the day-partitioned log in batches; the rollup adds what each batch appended to the buckets. The log is in
 * `clickDb` (store/click-database.ts: on PGlite a database on its own thread). Close hooks run
 * last-added first, and the HTTP server has drained before any: so the flusher's stop (added
 * after the rollup's) writes every buffered visit before the rollup's last round, and both
 * before the click database closes (its hook was added before this).
 */
async function startClicks(
  config: SystemConfig,
  db: Database,
  clickDb: Database,
  service: Service,
  metrics: SystemMetrics,
  clock: Clock,
) {
  const key = await loadPermutationKey(db, { randomBytes, nowMs: clock.nowMs() }, VISITORS_KEY);
  const buffer = new ClickBuffer({
    maxEntries: config.clickBufferMax,
    onDrop: (n) => metrics.clicksDropped.inc(n),
  });
  const store = new ClickStore(clickDb);
  const log = service.log;
  const rollup = new ClickRollup({
    store,
    clock,
    intervalMs: config.rollupIntervalMs,
    onError: (err) => log.warn({ err }, "click rollup failed; retrying"),
  });
  const encoder = new WorkerClickEncoder({ key, timeoutMs: CLICK_ENCODE_TIMEOUT_MS });
  // Closed after the flusher's last flush: close hooks run last-added first.
  service.onClose(() => encoder.close());
  const flusher = new ClickFlusher({
    buffer,
    store,
    encoder,
    maxBatch: config.clickFlushMaxBatch,
    intervalMs: config.clickFlushIntervalMs,
    onError: (err) =>
      log.warn({ err, waiting: buffer.size }, "click flush failed; the batch waits in the buffer"),
    onFlushed: (n) => metrics.clicksFlushed.inc(n),
  });
  rollup.start();
  service.onClose(async () => {
    await rollup.stop();
    await rollup.runOnce();
  });
  flusher.start();
  service.onClose(() => flusher.stop());
  const edge = startEdgeIngester(config, clickDb, service, metrics, key);
  if (edge) service.onClose(() => edge.stop());
  return { buffer, store, flusher, rollup, edge };
}

async function bootstrapWorkspace(config: SystemConfig, db: Database, clock: Clock) {
  if (config.databaseUrl !== undefined || config.adminToken !== undefined) return undefined;
  const created = await createWorkspaceIfAbsent(
    db,
    { id: DEMO_WORKSPACE, name: "demo (bootstrap workspace)" },
    { nowMs: clock.nowMs(), randomBytes },
  );
  return created && { workspaceId: created.workspace.id, apiKey: created.apiKey.key };
}

/** The service's start (infra's startService): its database, the API, the workers; the click database comes in opening. */
function startShortener(
  config: SystemConfig,
  env: NodeJS.ProcessEnv,
  options: MainOptions,
  clock: Clock,
  clickDbOpening: Promise<ClickDatabase | undefined>,
) {
  return startService({
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors, shortenerIdempotency.registry, scenarioErrors],
      openapi: {
        securitySchemes: bearerSecurityScheme(
          "Workspace API key (usk_...); the admin token on /admin routes",
        ),
      },
      description:
        "Global URL shortener (seed 000 §9): codes unique by construction, redirects off the database.",
    },
    database: {
      system: SYSTEM,
      env,
      ...databaseOptionsOf(config),
      pgliteThread: { maxPending: SERVICE_DATABASE_MAX_PENDING },
      migrate: migrateShortenerStore,
    },
    build: async ({ service, db }) => {
      const metrics = createMetrics(service.registry, { version: VERSION });
      const links = new LinkRepository(db);
      const reader = readPathOf(config, links, metrics, clock);
      // Closed after every click hook below (hooks run last-added first).
      const own = await clickDbOpening;
      if (own !== undefined) service.onClose(() => own.close());
      const clicksDb = own?.db ?? db;
      const clicks = config.clicks
        ? await startClicks(config, db, clicksDb, service, metrics, clock)
        : undefined;
      const clickStore = clicks?.store ?? new ClickStore(clicksDb);
      const idempotency = shortenerIdempotencyStore(db, { clock });
      startIdempotencyPruner(idempotency, config, service);
      const { redirect } = await registerApi(service.app, {
        db,
        links,
        reader: purgingReadPath(reader, config, service, metrics),
        codes: await codeSourceOf(config, db, service, clock),
        verifier:
          options.verifier ??
          localListVerifier({
            ...config.blocklist,
            ownDomains: config.domains.map((d) => new URL(d.origin).hostname),
          }),
        domains: config.domains,
        clock,
        defaultCacheMaxAgeS: config.defaultCacheMaxAgeS,
        limiter: new CreateLimiter({
          ratePerS: config.createRatePerS,
          burst: config.createBurst,
          maxKeys: MAX_LIMITED_KEYS,
        }),
        metrics,
        idempotency,
        visits: options.visits ?? clicks?.buffer ?? noVisits,
        staleIfErrorS: config.staleIfErrorS,
        edgeToken: config.edgeToken,
        randomBytes,
        adminToken: config.adminToken,
        clicks: clickStore,
        extraRoutes: (scope, callerOf) => {
          registerAnalyticsRoutes(
            scope,
            { links, clicks: clickStore, domains: config.domains, clock },
            callerOf,
          );
        },
      });
      const fastPath =
        reader.peek === undefined
          ? undefined
          : installRedirectFastPath(service.app.server, {
              core: redirect,
              reader: { peek: reader.peek.bind(reader) },
              clock,
              closing: () => service.closing,
              registry: service.registry,
            });
      startReaper(config, links, service, metrics, clock);
      // The console's scenario (issue 23), loopback only; on a private origin and a private nginx.
      const scenarios = new ScenarioRuns([edgeOnOffScenario({ start: main })]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      const bootstrap = await bootstrapWorkspace(config, db, clock);
      const noWorkspace = bootstrap === undefined && !(await anyWorkspace(db));
      return { metrics, reader, clicks, clicksDb, fastPath, bootstrap, noWorkspace };
    },
    listen: { port: config.port, host: config.host },
    listening: (_, { db }) => ({
      engine: db.engine,
      counter: config.redisUrl === undefined ? "sql" : "redis",
    }),
    announce: ({ bootstrap, noWorkspace }, { service, url }) => {
      if (bootstrap) {
        const hint = `curl -s ${url}/v1/links -H 'Authorization: Bearer ${bootstrap.apiKey}' -H 'content-type: application/json' -d '{"url":"https://example.com/"}'`;
        service.log.info(
          { ...bootstrap, try: hint },
          "demo workspace created: its API key is shown only now",
        );
      }
      if (noWorkspace) {
        service.log.warn(
          { next: "npx casebook url-shortener new-key --workspace demo (with URL_SHORTENER_ADMIN_TOKEN)" },
          "no workspace yet: create one and its API key through the admin API",
        );
      }
    },
  });
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  options: MainOptions = {},
): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const clock = options.clock ?? systemClock;
  // Started before the service's own database: on PGlite the two start on two threads at once.
  const clickDbOpening = openClickDatabase({
    system: SYSTEM,
    databaseUrl: config.databaseUrl,
    schema: config.databaseSchema,
    env,
  });
  // Awaited in build; if the start fails before it, the catch below closes it.
  clickDbOpening.catch(() => {});
  let started: Awaited<ReturnType<typeof startShortener>>;
  try {
    started = await startShortener(config, env, options, clock, clickDbOpening);
  } catch (error) {
    await (await clickDbOpening.catch(() => undefined))?.close();
    throw error;
  }
  const { url, service, db, built } = started;
  const { metrics, reader, clicks, clicksDb, fastPath, bootstrap } = built;
  return {
    url,
    service,
    db,
    config,
    metrics,
    reader,
    clicks,
    clicksDb,
    fastPath,
    bootstrap,
    close: () => service.close(),
  };
}

if (import.meta.main) {
  // Like src/edge/run-with-edge.ts's isEdgeLaunch; that module is loaded only with --edge (it starts nginx through lab).
  const edge = process.argv.slice(2).includes("--edge");
  await runServiceEntry({
    name: SYSTEM,
    summary: "global URL shortener (seed 000 §9)",
    schema: configSchema,
    usage: [
      `npx casebook run ${SYSTEM}`,
      `npx casebook run ${SYSTEM} --edge     # with its nginx edge in front (short links point at the edge)`,
      `node systems/${SYSTEM}/src/main.ts [--edge]`,
    ],
    notes: `An API key: npx casebook ${SYSTEM} new-key [--workspace ID] (needs URL_SHORTENER_ADMIN_TOKEN).\nThe API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => {
      if (!edge) return (await main()).service;
      const { mainWithEdge } = await import("./edge/run-with-edge.ts");
      const running = await mainWithEdge(main);
      // The edge goes first on close (close hooks run last-added first).
      running.service.onClose(() => running.edge.stop());
      return running.service;
    },
  });
}

/**
 * Composition root of feed — news feed / timeline (seed 000 §3): config → database
 * (PostgreSQL or embedded PGlite) and migrations → the timelines (Redis with REDIS_URL, else
 * the in-process twin) → the fan-out (domain) and its worker (FEED_ROLE all|fanout) → the
 * home-feed reader and the API (FEED_ROLE all|api) → graceful shutdown. Stateless with Redis
 * and PostgreSQL: run API replicas and fan-out workers as separate processes.
 *
 * @example
 * // PORT=8103 node systems/feed/src/main.ts   (npx casebook run feed runs it through the CLI)
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
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "@casebook/infra/redis/script-runner";
import { PRUNE_MAX_BATCH } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { kitErrors } from "@casebook/kit/kit-errors";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { VerifiedKeyCache } from "@casebook/kit/verified-key-cache";
import packageJson from "../package.json" with { type: "json" };
import { registerAdminApi } from "./api/admin-routes.ts";
import { createUserAuth, userGuard } from "./api/auth.ts";
import { registerApi } from "./api/register-api.ts";
import { configSchema, loadSystemConfig, type SystemConfig, sentinelNodesOf } from "./config.ts";
import { Fanout } from "./domain/fanout.ts";
import { HomeFeed } from "./domain/home-feed.ts";
import { RankedFeed } from "./domain/ranked-feed.ts";
import { deriveThresholds, type Thresholds } from "./domain/tiers.ts";
import { errors } from "./errors.ts";
import { createMetrics, type SystemMetrics } from "./metrics.ts";
import { celebrityPostScenario } from "./scenarios/celebrity-post-scenario.ts";
import { CelebrityLists } from "./store/celebrity-lists.ts";
import { fanoutOutbox } from "./store/fanout-outbox.ts";
import { GraphStore } from "./store/graph-store.ts";
import { migrateFeed } from "./store/migrate.ts";
import { PostCache } from "./store/post-cache.ts";
import { PostStore } from "./store/post-store.ts";
import { ReaderViews } from "./store/reader-views.ts";
import { timelineTwins } from "./store/script-twins.ts";
import { TimelineStore, timelineScriptsDir } from "./store/timeline-store.ts";
import { batchedKeyChecks, feedIdempotency, feedIdempotencyStore } from "./store/user-keys.ts";
import { WarmHomeRead } from "./store/warm-home-read.ts";
import { FanoutWorker } from "./workers/fanout-worker.ts";

export const SYSTEM = "feed";
export const VERSION = packageJson.version;
/** FD-19: `SET lock:rebuild:{user} NX PX 5000`. */
const REBUILD_LOCK_MS = 5_000;
const DAY_MS = 86_400_000;
/** FD-22: candidates ranked per session ("e.g. 200 or 500"), kept 30 minutes, recency half-life 6 h. */
const RANKED_CANDIDATES = 200;
const RANKED_SESSION_TTL_MS = 1_800_000;
const RANKED_HALF_LIFE_MS = 6 * 3_600_000;
/** An edit's "being edited" marker on a cached body, and a miss's lease to fill it (FD-21). */
const POST_EDIT_MARKER_MS = 60_000;
const POST_FILL_LEASE_MS = 10_000;
/** Verified API keys one process remembers at most (~150 B each). */
const MAX_CACHED_KEYS = 100_000;
/** How often expired Idempotency-Keys are pruned. */
const IDEMPOTENCY_PRUNE_EVERY_MS = 60_000;

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly db: Database;
  readonly config: SystemConfig;
  readonly timelines: TimelineStore;
  readonly posts: PostStore;
  readonly graph: GraphStore;
  /** The script runner the lists and the caches share (Redis, or the in-process twin). */
  readonly runner: ScriptRunner;
  /** The caches beside the lists that make a warm read one round trip (issue 20). */
  readonly bodies: PostCache;
  readonly views: ReaderViews;
  readonly feed: HomeFeed;
  readonly fanout: Fanout;
  /** Undefined on an API-only replica. */
  readonly worker: FanoutWorker | undefined;
  readonly metrics: SystemMetrics;
  readonly thresholds: Thresholds;
  close(): Promise<void>;
}

export interface MainOptions {
  clock?: Clock;
  /** Start the fan-out worker's loop (default true); tests drive it with `worker.runOnce()`. */
  startWorker?: boolean;
}

async function timelineRunner(config: SystemConfig, service: Service, clock: Clock): Promise<ScriptRunner> {
  const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
  if (config.redisUrl === undefined && config.redisSentinels === undefined) {
    const keyspace = new InProcessKeyspace({ clock, maxKeys: 1_000_000, maxElementsPerKey: 100_000 });
    return new InProcessScriptRunner({ registry, twins: timelineTwins, keyspace });
  }
  const redis = await connectRedis({
    ...(config.redisSentinels === undefined
      ? { url: config.redisUrl }
      : { sentinel: { nodes: sentinelNodesOf(config.redisSentinels), masterName: config.redisMasterName } }),
    keyPrefix: config.redisKeyPrefix,
    commandTimeoutMs: 2_000,
  });
  service.onClose(() => closeRedis(redis));
  await registry.loadAll(redis);
  return new RedisScriptRunner(redis, registry);
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  options: MainOptions = {},
): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const clock = options.clock ?? systemClock;
  const thresholds = deriveThresholds({
    fanoutWritesPerS: config.fanoutWritesPerS,
    delayTargetMs: config.delayTargetMs,
    activeShare: config.activeShare,
  });
  const { url, service, db, built } = await startService({
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors, feedIdempotency.registry, redisErrors, sqlErrors, kitErrors, scenarioErrors],
      openapi: {
        securitySchemes: bearerSecurityScheme(
          "A user's API key (`casebook feed new-key`): acts as that user",
        ),
      },
      description:
        "News feed / timeline (seed 000 §3): hybrid fan-out with thresholds derived from measured capacity.",
    },
    database: { system: SYSTEM, env, ...databaseOptionsOf(config), migrate: migrateFeed },
    build: async ({ service, db }) => {
      const runner = await timelineRunner(config, service, clock);
      const timelines = new TimelineStore(runner, {
        cap: config.timelineCap,
        ttlMs: config.timelineTtlS * 1000,
        lockMs: REBUILD_LOCK_MS,
      });
      // FD-18: a Redis that is down or failing over → the read pulls (206) instead of failing.
      const isStoreDown = (error: unknown) =>
        redisErrors.is(error, "REDIS_UNAVAILABLE") || redisErrors.is(error, "REDIS_TIMEOUT");
      const posts = new PostStore(db);
      const graph = new GraphStore(db);
      // The warm read's caches beside the lists (issue 20): bodies, readers' views, celebrity ids.
      const bodies = new PostCache(runner, posts, {
        ttlMs: config.postCacheTtlMs,
        markerMs: POST_EDIT_MARKER_MS,
        leaseMs: POST_FILL_LEASE_MS,
        isStoreDown,
      });
      const views = new ReaderViews(runner, graph, { ttlMs: config.readerViewTtlMs, isStoreDown });
      const celebrities =
        config.celebrityCacheTtlMs > 0
          ? new CelebrityLists(runner, posts, {
              window: config.timelineCap,
              ttlMs: config.celebrityCacheTtlMs,
              isStoreDown,
            })
          : undefined;
      const ids = new SnowflakeGenerator({ clock, workerId: config.workerId });
      const fanout = new Fanout({
        graph,
        timelines,
        posts,
        clock,
        thresholds: () => thresholds,
        activeDays: config.activeDays,
        pageSize: 1_000,
        cap: config.timelineCap,
        celebrities,
        views,
      });
      let metrics: SystemMetrics | undefined;
      const feed = new HomeFeed({
        timelines,
        posts: bodies,
        graph: views,
        clock,
        thresholds: () => thresholds,
        cap: config.timelineCap,
        rebuildMaxAgeMs: config.timelineTtlS * 1000 + config.activeDays * DAY_MS,
        maxRebuilds: config.maxRebuilds,
        newOwner: () => randomBytes(12).toString("base64url"),
        celebrityIds: async (author, before, limit) =>
          celebrities
            ? celebrities.ids(author, before, limit)
            : (await posts.recentOf(author, { beforeId: before, limit })).map((e) => e.id),
        onRebuild: (outcome) => metrics?.rebuilds.inc({ outcome }),
        isListStoreDown: isStoreDown,
        warm: new WarmHomeRead(runner, {
          listTtlMs: config.timelineTtlS * 1000,
          celebrities: celebrities !== undefined,
        }),
        onRead: (path) => metrics?.homeReads.inc({ path }),
      });
      const ranked = new RankedFeed({
        feed,
        rankings: timelines,
        posts: bodies,
        clock,
        newSession: () => randomBytes(12).toString("base64url"),
        candidates: RANKED_CANDIDATES,
        sessionTtlMs: RANKED_SESSION_TTL_MS,
        halfLifeMs: RANKED_HALF_LIFE_MS,
      });
      const runsWorker = config.role !== "api";
      // The key cache's misses and background re-checks, one SELECT per batch (issue 20).
      const keyChecks = batchedKeyChecks(db, clock);
      metrics = createMetrics(
        service.registry,
        { version: VERSION },
        {
          queue: runsWorker ? () => fanoutOutbox.lag(db, clock.nowMs()) : undefined,
          rebuildsInFlight: () => feed.rebuildsInFlight,
          thresholds: () => thresholds,
          keyChecks: config.role === "fanout" ? undefined : keyChecks.stats,
        },
      );
      const m = metrics;
      if (config.role !== "fanout") {
        const idempotency = feedIdempotencyStore(db, { clock });
        const keys = new VerifiedKeyCache(keyChecks, {
          clock,
          ttlMs: config.keyCacheTtlMs,
          maxEntries: MAX_CACHED_KEYS,
        });
        // A reader who keeps reading is re-checked in the background: no read waits for the table.
        service.onClose(keys.startRefreshing());
        await registerApi(service.app, {
          posts,
          bodies,
          celebrities,
          views,
          line: () => thresholds.activePushMax,
          graph,
          feed,
          ranked,
          ids,
          clock,
          db,
          idempotency,
          guard: userGuard(createUserAuth((key) => keys.read(key))),
          authorFeedMaxAgeS: 5,
        });
        if (config.adminToken !== undefined)
          await registerAdminApi(service.app, {
            db,
            clock,
            randomBytes,
            adminToken: config.adminToken,
            onKeysChanged: () => keys.clear(),
          });
        // Keys answer for the store's retention (a day); past it this loop deletes them, a batch at a time.
        const pruner = new BackgroundLoop({
          name: "idempotency pruner",
          round: async () => (await idempotency.prune({ maxBatch: PRUNE_MAX_BATCH })) === PRUNE_MAX_BATCH,
          idleMs: IDEMPOTENCY_PRUNE_EVERY_MS,
          failureBackoff: { capMs: IDEMPOTENCY_PRUNE_EVERY_MS, jitter: "none" },
          onError: (err) => service.log.warn({ err }, "idempotency key prune failed; retrying"),
        });
        pruner.start();
        service.onClose(() => pruner.stop());
        // The console's scenario (issue 23's mechanism), loopback only, in a private world of its own.
        const scenarios = new ScenarioRuns([celebrityPostScenario()]);
        registerScenarioRoutes(service.app, scenarios);
        service.onClose(() => scenarios.drain());
      }
      const worker = runsWorker
        ? new FanoutWorker(db, {
            fanout,
            clock,
            onDone: (event, result) => {
              if (event.kind !== "post") return;
              m.fanoutWrites.inc({ tier: result.tier }, result.written);
              m.fanoutLag.observe(
                { tier: result.tier },
                Math.max(0, clock.nowMs() - event.createdAtMs) / 1000,
              );
            },
            onError: (err, label) =>
              service.log.warn({ err, event: label }, "fan-out event failed; it will be retried"),
          })
        : undefined;
      if (worker && options.startWorker !== false) {
        worker.start();
        service.onClose(() => worker.stop());
      }
      return { runner, timelines, posts, graph, bodies, views, feed, fanout, worker, metrics: m };
    },
    listen: { port: config.port, host: config.host },
    listening: (_, { db }) => ({
      engine: db.engine,
      timelines:
        config.redisSentinels !== undefined
          ? "redis (sentinel)"
          : config.redisUrl === undefined
            ? "in-process"
            : "redis",
      role: config.role,
      thresholds,
    }),
  });
  return { url, service, db, config, thresholds, ...built, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: SYSTEM,
    summary: "news feed / timeline (seed 000 §3)",
    schema: configSchema,
    usage: [
      `npx casebook run ${SYSTEM}`,
      `node systems/${SYSTEM}/src/main.ts`,
      `FEED_ROLE=fanout REDIS_URL=… node systems/${SYSTEM}/src/main.ts`,
    ],
    notes: `The API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => (await main()).service,
  });
}

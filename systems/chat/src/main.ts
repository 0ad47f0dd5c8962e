/**
 * Composition root of chat — real-time chat with offline delivery (seed 000 §2):
 * config → database (PostgreSQL or embedded PGlite) and migrations → Snowflake node id →
 * session table and routing bus (Redis, or in-process) → send path → API (role api/all) →
 * gateway on the same HTTP server (role gateway/all) → listen. The send service and the
 * gateways are the same program in different roles, so the one that holds sockets can be
 * restarted apart from the one that writes history (CH-04, CH-27).
 *
 * @example
 * // PORT=8102 node systems/chat/src/main.ts   (npx casebook run chat runs it through the CLI)
 * const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
 * running.issuerToken; // for POST /v1/tokens
 * await running.close();
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { bearerSecurityScheme } from "@casebook/infra/http/bearer-auth";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { databaseOptionsOf } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { dataDirFor } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { openStream } from "@casebook/infra/stream/open-stream";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { kitErrors } from "@casebook/kit/kit-errors";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import packageJson from "../package.json" with { type: "json" };
import { MediaLibrary } from "./api/media-library.ts";
import { MediaUrls } from "./api/media-urls.ts";
import { registerApi } from "./api/register-api.ts";
import { UserTokens } from "./api/user-tokens.ts";
import { PushClient } from "./clients/push-client.ts";
import { configSchema, loadSystemConfig, type SystemConfig } from "./config.ts";
import { CommitOffsets } from "./domain/commit-offsets.ts";
import type { PresenceBus } from "./domain/presence.ts";
import { PushPath } from "./domain/push-path.ts";
import type { RoutingBus } from "./domain/routing.ts";
import { type ChannelEvents, noPush, type OfflinePort, SendPath } from "./domain/send-path.ts";
import type { SessionTable } from "./domain/sessions.ts";
import { errors } from "./errors.ts";
import { BackendClient } from "./gateway/backend-client.ts";
import { DEFAULT_GATEWAY_LIMITS, Gateway } from "./gateway/gateway.ts";
import { registerWebPage } from "./gateway/web-page.ts";
import { createMetrics, type SystemMetrics } from "./metrics.ts";
import type { MainOptions, RunningSystem } from "./running-system.ts";
import { gatewayKillScenario } from "./scenarios/gateway-kill-scenario.ts";
import { markChannelEventPublished } from "./store/channel-event-outbox.ts";
import { HistoryStore } from "./store/history-store.ts";
import { MediaStore } from "./store/media-store.ts";
import { MemoryPresenceBus } from "./store/memory-presence-bus.ts";
import { MemoryRouting } from "./store/memory-routing.ts";
import { MemorySessions } from "./store/memory-sessions.ts";
import { migrateChatStore } from "./store/migrate.ts";
import { ObjectDirectory } from "./store/object-directory.ts";
import { PushTokenStore } from "./store/push-token-store.ts";
import { RedisPresenceBus } from "./store/redis-presence-bus.ts";
import { RedisRouting } from "./store/redis-routing.ts";
import { RedisSessions } from "./store/redis-sessions.ts";
import { ChannelEventRelay } from "./workers/channel-event-relay.ts";
import { ChannelFanout } from "./workers/channel-fanout.ts";
import { MediaSweeper } from "./workers/media-sweeper.ts";

export const SYSTEM = "chat";
export const VERSION = packageJson.version;

export type { MainOptions, RunningSystem } from "./running-system.ts";

/** Bound on a session-table or routing command's reply (see sharedState). */
const ROUTING_REDIS_TIMEOUT_MS = 2_000;

interface Shared {
  sessions: SessionTable;
  routing: RoutingBus;
  presence: PresenceBus;
}

async function sharedState(config: SystemConfig, service: Service, clock: Clock): Promise<Shared> {
  if (config.redisUrl === undefined)
    return {
      sessions: new MemorySessions(),
      routing: new MemoryRouting(),
      presence: new MemoryPresenceBus(),
    };
  // Auto-pipelining: a routing batch's lookup and its publishes (one per gateway) leave in one
  // write. The 250 ms default bound is ioredis's timer, checked before the socket is read: on a
  // busy event loop it fired with the reply already there and dropped live deliveries. Routing
  // runs after the sender's answer and a missed delivery waits in the history, so the bound
  // here only has to catch a Redis that is gone or hung (ROUTING_REDIS_TIMEOUT_MS).
  const redis = await connectRedis({
    url: config.redisUrl,
    autoPipelining: true,
    commandTimeoutMs: ROUTING_REDIS_TIMEOUT_MS,
  });
  // A subscribed connection runs nothing else; commands on it would be refused.
  const subscriber = await connectRedis({ url: config.redisUrl, commandTimeoutMs: 5_000 });
  service.onClose(() => closeRedis(subscriber));
  service.onClose(() => closeRedis(redis));
  return {
    sessions: new RedisSessions(redis, config.redisPrefix, () => clock.nowMs()),
    routing: new RedisRouting(redis, subscriber, config.redisPrefix),
    presence: new RedisPresenceBus(redis, subscriber, config.redisPrefix),
  };
}

function buildApi(
  db: Database,
  shared: Shared,
  deps: {
    metrics: SystemMetrics;
    tokens: UserTokens;
    issuerToken: string;
    clock: Clock;
    service: Service;
    offline: OfflinePort;
    channelEvents?: ChannelEvents;
  },
) {
  const history = new HistoryStore(db, { onSendBatch: (size) => deps.metrics.sendBatchSize.observe(size) });
  const offsets = new CommitOffsets(history, { maxBatch: 1_000, maxPending: 100_000 });
  deps.service.onClose(() => offsets.drain());
  const { metrics, service } = deps;
  const sendPath = new SendPath({
    history,
    offsets,
    sessions: shared.sessions,
    routing: shared.routing,
    offline: deps.offline,
    clock: deps.clock,
    onDeliveryError: (err) => {
      metrics.deliveryErrors.inc();
      service.log.warn({ err }, "delivery failed after the message was stored; it waits in the history");
    },
    onRouted: (outcome, count) => metrics.routed.inc({ outcome }, count),
    ...(deps.channelEvents ? { channelEvents: deps.channelEvents } : {}),
  });
  service.onClose(() => sendPath.drain());
  return { history, sendPath, offsets };
}

/** CH-18: the push path when a push service is configured; otherwise the history waits for the app to open. */
function pushPathOf(
  config: SystemConfig,
  tokens: PushTokenStore,
  metrics: SystemMetrics,
  service: Service,
): OfflinePort {
  if (config.pushUrl === undefined) return noPush;
  const provider = new PushClient({ baseUrl: config.pushUrl });
  service.onClose(() => provider.close());
  return new PushPath({ tokens, provider, onOutcome: (outcome) => metrics.pushes.inc({ outcome }) });
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  options: MainOptions = {},
): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const clock = options.clock ?? systemClock;
  const tokenSecret = config.jwtSecret ? Buffer.from(config.jwtSecret, "utf8") : randomBytes(32);
  const tokens = new UserTokens(tokenSecret);
  const issuerToken = config.issuerToken ?? randomBytes(24).toString("base64url");
  const gatewayId =
    config.gatewayId ?? `${hostname().slice(0, 32)}-${process.pid}-${randomBytes(3).toString("hex")}`;
  const common = {
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors, sqlErrors, redisErrors, kitErrors, scenarioErrors],
      openapi: {
        securitySchemes: bearerSecurityScheme("A user token (JWT); the issuer token on POST /v1/tokens"),
      },
      description: "Real-time chat with offline delivery (seed 000 §2): the history is the queue.",
    },
    build: async ({ service, db }: { service: Service; db: Database | undefined }) => {
      const metrics = createMetrics(service.registry, { version: VERSION });
      const shared = await sharedState(config, service, clock);
      if (db !== undefined) {
        const ids = new SnowflakeGenerator({ clock, workerId: await new HistoryStore(db).takeNodeId() });
        const pushTokens = new PushTokenStore(db);
        const offline = options.offline ?? pushPathOf(config, pushTokens, metrics, service);
        const stream = await openStream({
          system: SYSTEM,
          ...(config.natsUrl ? { url: config.natsUrl } : {}),
          env: {},
        });
        service.onClose(() => stream.close());
        const fanoutRoute = {
          to: async (_u: readonly string[], _f: Record<string, unknown>): Promise<unknown> => undefined,
        };
        const fanout = new ChannelFanout({
          stream,
          streamName: config.streamName,
          slices: config.channelSlices,
          history: new HistoryStore(db),
          route: (userIds, frame) => fanoutRoute.to(userIds, frame),
          log: service.log,
          onSlice: (slice, members) => metrics.fanoutMembers.inc({ slice: String(slice) }, members),
        });
        const { history, sendPath, offsets } = buildApi(db, shared, {
          // The first try of a channel's event; the relay below publishes what it leaves.
          channelEvents: {
            publish: async (message) => {
              await fanout.publish(message);
              await markChannelEventPublished(db, message.id, clock.nowMs());
            },
          },
          metrics,
          tokens,
          issuerToken,
          clock,
          service,
          offline,
        });
        fanoutRoute.to = (userIds, frame) => sendPath.route(userIds, frame);
        await fanout.start();
        service.onClose(() => fanout.stop());
        const channelRelay = new ChannelEventRelay(db, {
          history,
          offsets,
          events: fanout,
          clock,
          log: service.log,
          onPublished: () => metrics.channelEventsRelayed.inc(),
        });
        channelRelay.start();
        service.onClose(() => channelRelay.stop());
        const mediaRows = new MediaStore(db);
        const mediaObjects = new ObjectDirectory(config.mediaDir ?? dataDirFor("chat-media", env));
        const mediaSweeper = new MediaSweeper({
          rows: mediaRows,
          objects: mediaObjects,
          clock,
          orphanAfterMs: config.mediaOrphanAfterMs,
          everyMs: config.mediaSweepEveryMs,
          onSwept: (what, count) => metrics.mediaSwept.inc({ what }, count),
          log: service.log,
        });
        mediaSweeper.start();
        service.onClose(() => mediaSweeper.stop());
        await registerApi(service.app, {
          history,
          sendPath,
          sessions: shared.sessions,
          ids,
          tokens,
          issuerToken,
          clock,
          onSent: (created) => metrics.messages.inc({ created: String(created) }),
          onGranted: (kind) => metrics.grants.inc({ kind }),
          pushTokens,
          media: new MediaLibrary({
            rows: mediaRows,
            objects: mediaObjects,
            urls: new MediaUrls({ secret: tokenSecret, clock }),
            ids,
            clock,
            maxBytes: config.mediaMaxBytes,
            publicUrl: config.mediaUrl?.replace(/\/+$/, ""),
          }),
        });
        // The console's scenario (loopback only): a deployment of its own, never this one's data.
        const scenarios = new ScenarioRuns([gatewayKillScenario(main)]);
        registerScenarioRoutes(service.app, scenarios);
        service.onClose(() => scenarios.drain());
      }
      if (config.role === "api") return { metrics, gateway: undefined, shared };
      const backendUrl = { current: config.apiUrl };
      const backend = new BackendClient({
        baseUrl: () => backendUrl.current,
        deadlineMs: config.backendDeadlineMs,
        maxInFlight: config.backendMaxInFlight,
      });
      service.onClose(() => backend.close());
      const gateway = new Gateway({
        gatewayId,
        tokens,
        backend,
        sessions: shared.sessions,
        routing: shared.routing,
        presence: shared.presence,
        clock,
        limits: {
          ...DEFAULT_GATEWAY_LIMITS,
          heartbeatMs: config.heartbeatMs,
          idleMs: config.idleMs,
          lifetimeMs: config.lifetimeMs,
          sessionTtlMs: 3 * config.heartbeatMs,
          connectRatePerS: config.connectRatePerS,
          connectMaxWaitMs: config.connectMaxWaitMs,
          framesPerS: config.framesPerS,
          frameBurst: 2 * config.framesPerS,
          drainMs: config.drainMs,
        },
        log: service.log,
        metrics: {
          onConnections: (n) => metrics.connections.set(n),
          onFrameError: (code) => metrics.frameErrors.inc({ code }),
          onDelivered: (createdAt, count) => {
            if (!createdAt) return;
            const lagS = Math.max(0, clock.nowMs() - Date.parse(createdAt)) / 1_000;
            // Once per message and gateway: its connections got it in the same turn. One observe
            // per delivery was ~4% of a gateway's CPU at saturation (500-member groups, bench profile).
            metrics.deliveryLag.observe(lagS);
            metrics.deliveries.inc(count);
          },
        },
      });
      await gateway.start();
      gateway.attach(service.app.server);
      registerWebPage(service.app);
      // Before the HTTP server closes: sockets leave with 4000, not cut by the server's close.
      service.app.addHook("preClose", async () => gateway.drain());
      return { metrics, gateway, shared, backendUrl };
    },
    listen: { port: config.port, host: config.host },
    listening: () => ({ role: config.role, gatewayId: config.role === "api" ? undefined : gatewayId }),
    announce: (_: unknown, { service, url }: { service: Service; url: string }) => {
      if (config.issuerToken === undefined && config.role !== "gateway") {
        service.log.info(
          {
            issuerToken,
            try: `curl -s ${url}/v1/tokens -H 'authorization: Bearer ${issuerToken}' -H 'content-type: application/json' -d '{"userId":"ana","deviceId":"phone"}'`,
          },
          "issuer token generated for this start (set CHAT_ISSUER_TOKEN to keep one)",
        );
      }
    },
  };
  // A gateway holds sockets and calls the send service: it opens no database (so N gateways
  // run beside one send service on the embedded PGlite, whose files one process owns).
  const started =
    config.role === "gateway"
      ? await startService(common)
      : await startService({
          ...common,
          database: { system: SYSTEM, env, ...databaseOptionsOf(config), migrate: migrateChatStore },
        });
  const built = started.built as Awaited<ReturnType<typeof common.build>>;
  if ("backendUrl" in built && built.backendUrl && built.backendUrl.current === undefined) {
    built.backendUrl.current = started.url;
  }
  return {
    url: started.url,
    service: started.service,
    config,
    metrics: built.metrics,
    issuerToken,
    gateway: built.gateway,
    close: () => started.close(),
  };
}

if (import.meta.main) {
  // Like src/edge/run-gateways.ts's gatewayLaunchOf; that module is loaded only with --gateways (it starts nginx through lab).
  const withGateways = process.argv.slice(2).some((a) => a === "--gateways" || a.startsWith("--gateways="));
  await runServiceEntry({
    name: SYSTEM,
    summary: "real-time chat with offline delivery (seed 000 §2)",
    schema: configSchema,
    usage: [
      `npx casebook run ${SYSTEM}`,
      `npx casebook run ${SYSTEM} --gateways 3 [--front-port 8190]   # send service + 3 gateway processes behind an nginx stream front`,
      `node systems/${SYSTEM}/src/main.ts [--gateways N] [--front-port P]`,
    ],
    notes: `The API, the socket protocol, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => {
      if (!withGateways) return (await main()).service;
      const { gatewayLaunchOf, mainWithGateways } = await import("./edge/run-gateways.ts");
      const running = await mainWithGateways(main, gatewayLaunchOf(process.argv.slice(2))!);
      // The gateways and the front go first on close (close hooks run last-added first).
      running.service.onClose(() => running.stopOutside());
      return running.service;
    },
  });
}

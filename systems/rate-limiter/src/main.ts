/**
 * Composition root of the rate-limiter service: config → Redis or the in-process
 * engine → Limiter → HTTP API (POST /v1/check, GET /v1/policies) → policy hot reload.
 * Stateless: run as many instances as you like against one REDIS_URL.
 */
import { fileURLToPath } from "node:url";
import { createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import { requireCredentialsBeyondLoopback } from "@casebook/infra/http/loopback-guard";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { field, loadConfig } from "@casebook/kit/config";
import { registerCheckRoute } from "./api/check-route.ts";
import { startEnvoyRls } from "./api/envoy-rls.ts";
import { createLimiterMetrics } from "./api/limiter-metrics.ts";
import { registerPoliciesRoute } from "./api/policies-route.ts";
import { createRateLimiter, rateLimiterDefaults } from "./create-rate-limiter.ts";
import { rateLimitErrors } from "./rate-limit-errors.ts";
import { loadPolicyFile, watchPolicyFile } from "./workers/policy-watcher.ts";

export const configSchema = {
  ...listenFields({ port: 8101 }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis:", "rediss:"],
    description: "Shared Redis; unset = in-process engine (single instance)",
  }),
  redisClusterNodes: field.string({
    env: "REDIS_CLUSTER_NODES",
    description: "Redis Cluster seed nodes, comma-separated redis:// URLs (instead of REDIS_URL)",
  }),
  policies: field.string({
    env: "RATE_LIMITER_POLICIES",
    default: fileURLToPath(new URL("../policies.yaml", import.meta.url)),
    description: "Policy file (YAML or JSON), hot-reloaded on change",
  }),
  keyPrefix: field.string({
    env: "RATE_LIMITER_KEY_PREFIX",
    default: "rl:",
    description: "Prefix of every Redis key",
  }),
  timeoutMs: field.int({
    env: "RATE_LIMITER_TIMEOUT_MS",
    default: rateLimiterDefaults.timeoutMs,
    min: 1,
    max: 10_000,
    description:
      "Bound on Redis's silence during a call (no reply on the connection); past it the policy's failMode decides",
  }),
  maxWaitMs: field.int({
    env: "RATE_LIMITER_MAX_WAIT_MS",
    default: rateLimiterDefaults.maxWaitMs,
    min: 1,
    max: 60_000,
    description:
      "Bound on one Redis call's whole wait while Redis answers others; past it the failMode decides",
  }),
  connectTimeoutMs: field.int({
    env: "RATE_LIMITER_CONNECT_TIMEOUT_MS",
    default: rateLimiterDefaults.connectTimeoutMs,
    min: 1,
    max: 600_000,
    description:
      "How long start-up waits for Redis; it starts either way and decides by failMode until Redis answers",
  }),
  breakerFailures: field.int({
    env: "RATE_LIMITER_BREAKER_FAILURES",
    default: rateLimiterDefaults.breakerFailures,
    min: 1,
    max: 1_000,
    description: "Consecutive Redis failures that open the breaker",
  }),
  breakerOpenMs: field.int({
    env: "RATE_LIMITER_BREAKER_OPEN_MS",
    default: rateLimiterDefaults.breakerOpenMs,
    min: 10,
    max: 600_000,
    description: "How long the breaker stays open before a probe",
  }),
  maxInFlight: field.int({
    env: "RATE_LIMITER_MAX_IN_FLIGHT",
    default: rateLimiterDefaults.maxInFlight,
    min: 1,
    max: 100_000,
    description: "Decisions in flight to Redis per process; past it checks queue",
  }),
  maxQueued: field.int({
    env: "RATE_LIMITER_MAX_QUEUED",
    default: rateLimiterDefaults.maxQueued,
    min: 0,
    max: 1_000_000,
    description: "Checks waiting for a decision slot; past it a check is shed (503 RATELIMIT_OVERLOADED)",
  }),
  queueWaitMs: field.int({
    env: "RATE_LIMITER_QUEUE_WAIT_MS",
    default: rateLimiterDefaults.queueWaitMs,
    min: 1,
    max: 60_000,
    description: "Longest wait for a decision slot before a check is shed (503 RATELIMIT_OVERLOADED)",
  }),
  heartbeatMs: field.int({
    env: "RATE_LIMITER_HEARTBEAT_MS",
    default: rateLimiterDefaults.heartbeatMs,
    min: 50,
    max: 60_000,
    description: "Heartbeat period in Redis; the live instance count divides fail-open's share",
  }),
  instances: field.int({
    env: "RATE_LIMITER_INSTANCES",
    default: rateLimiterDefaults.instances,
    min: 1,
    max: 10_000,
    description:
      "Fewest instances assumed to share the quota (the live heartbeat count replaces it when larger): fail-open holds quota/instances locally",
  }),
  tokens: field.string({
    env: "RATE_LIMITER_TOKEN",
    secret: true,
    // 16+ visible characters each: a guessable token is no credential; no whitespace (a bearer token has none).
    pattern: /^[\x21-\x2b\x2d-\x7e]{16,256}(,[\x21-\x2b\x2d-\x7e]{16,256}){0,15}$/,
    description:
      "Bearer token(s) the check API and the gRPC API require, comma-separated (rotation); unset = no auth, allowed only when HOST is loopback",
  }),
  grpcPort: field.int({
    env: "RATE_LIMITER_GRPC_PORT",
    min: 0,
    max: 65535,
    description: "Envoy rate limit service (gRPC, envoy.service.ratelimit.v3); unset = off, e.g. 8181",
  }),
  ...logLevelField(),
};

export interface RunningService {
  readonly url: string;
  readonly service: Service;
  close(): Promise<void>;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const config = loadConfig(configSchema, { env });
  const tokens = config.tokens?.split(",") ?? [];
  // HOST binds both the HTTP and the gRPC listener: one check covers both.
  requireCredentialsBeyondLoopback({
    host: config.host,
    credentialsSet: tokens.length > 0,
    setting: "RATE_LIMITER_TOKEN",
    credential: "a bearer token of 16+ characters (comma-separated for several)",
  });
  const policies = await loadPolicyFile(config.policies);
  const { url, service } = await startService({
    service: {
      name: "rate-limiter",
      version: "0.1.0",
      log: { level: config.logLevel },
      errors: [rateLimitErrors],
      description: "Distributed rate limiter (seed 000 §1): may key K spend C now?",
    },
    build: async ({ service }) => {
      const rl = await createRateLimiter({
        policies,
        redisUrl: config.redisUrl,
        redisClusterNodes: config.redisClusterNodes
          ?.split(",")
          .map((node) => node.trim())
          .filter(Boolean),
        keyPrefix: config.keyPrefix,
        timeoutMs: config.timeoutMs,
        maxWaitMs: config.maxWaitMs,
        connectTimeoutMs: config.connectTimeoutMs,
        breakerFailures: config.breakerFailures,
        breakerOpenMs: config.breakerOpenMs,
        instances: config.instances,
        maxInFlight: config.maxInFlight,
        maxQueued: config.maxQueued,
        queueWaitMs: config.queueWaitMs,
        heartbeatMs: config.heartbeatMs,
        onStoreError: (error) => service.log.warn({ err: error }, "limiter degraded: store call failed"),
        onUnreachableAtStart: (message) =>
          service.log.warn(`${message}; starting anyway: each policy's failMode decides until Redis answers`),
      });
      rl.breaker.onStateChange((change) => service.log.warn(change, "limiter store breaker changed state"));
      const metrics = createLimiterMetrics(service.registry, rl.limiter, rl.breaker, rl);
      service.onClose(async () => metrics.stop());
      // The API behind the token when one is set; /healthz, /readyz and /metrics stay open to probes.
      await service.app.register(async (scope) => {
        if (tokens.length > 0)
          scope.addHook("onRequest", createStaticTokenAuth({ realm: "rate-limiter", token: tokens }));
        registerCheckRoute(scope, rl.limiter, metrics);
        registerPoliciesRoute(scope, rl.limiter);
      });
      service.addCheck(rl.store.engine, () => rl.store.ping());
      if (config.grpcPort !== undefined) {
        const rls = await startEnvoyRls({
          limiter: rl.limiter,
          port: config.grpcPort,
          host: config.host,
          log: service.log.child({ api: "envoy-rls" }),
          metrics,
          tokens,
        });
        // Close hooks run last-added first: the gRPC server stops before the store closes.
        service.onClose(() => rls.close());
        service.log.info({ port: rls.port, domain: policies.domain }, "envoy rate limit service listening");
      }
      const stopWatching = watchPolicyFile({
        path: config.policies,
        onReload: (next) => {
          rl.limiter.setConfig(next);
          service.log.info({ policies: next.policies.length }, "policies reloaded");
        },
        onError: (error) =>
          service.log.error({ err: error }, "policy file refused; keeping the policies in force"),
      });
      service.onClose(() => rl.close());
      service.onClose(async () => stopWatching());
      return rl;
    },
    listen: { port: config.port, host: config.host },
    listening: (rl) => ({ engine: rl.store.engine, policies: policies.policies.length }),
  });
  return { url, service, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "rate-limiter",
    summary: "distributed rate limiter (seed 000 §1): may key K spend C now?",
    schema: configSchema,
    usage: ["npx casebook run rate-limiter", "node systems/rate-limiter/src/main.ts"],
    notes: "The API, the policy file and the failure modes: systems/rate-limiter/README.md",
    start: async () => (await main()).service,
  });
}

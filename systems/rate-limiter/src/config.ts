/**
 * The rate limiter's settings: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * Defaults come from `rateLimiterDefaults` (create-rate-limiter.ts), so the library and the
 * service agree on them.
 *
 * @example
 * const config = loadRateLimiterConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.timeoutMs; // rateLimiterDefaults.timeoutMs
 */
import { fileURLToPath } from "node:url";
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import { rateLimiterDefaults } from "./create-rate-limiter.ts";

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

export type RateLimiterConfig = ConfigOf<typeof configSchema>;

export function loadRateLimiterConfig(env: NodeJS.ProcessEnv): RateLimiterConfig {
  return loadConfig(configSchema, { env });
}

/**
 * The settings of feed: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * The two design parameters of correction 7 are here, not in code: the timeline's length
 * (FEED_TIMELINE_CAP, FD-07/12) and the propagation-delay target the celebrity thresholds
 * are derived from (FEED_DELAY_TARGET_MS with FEED_FANOUT_WRITES_PER_S, FD-08).
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.timelineCap; // 128
 */
import { databaseFields, listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { ConfigError, type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  ...logLevelField(),
  ...databaseFields({
    system: "feed",
    envPrefix: "FEED_DB",
    fields: ["schema", "maxConnections", "statementTimeoutMs"],
  }),
  redisUrl: field.url({
    env: "REDIS_URL",
    protocols: ["redis:", "rediss:"],
    secret: true,
    description: "Redis for the timelines; unset = the in-process twin (one replica)",
  }),
  redisSentinels: field.string({
    env: "REDIS_SENTINELS",
    maxLength: 1_000,
    pattern: /^[A-Za-z0-9.-]+:[0-9]{1,5}(,[A-Za-z0-9.-]+:[0-9]{1,5})*$/,
    description:
      "host:port,… of redis-sentinels watching the timelines' master (FD-18: a replica takes over when the master dies); replaces REDIS_URL",
  }),
  redisMasterName: field.string({
    env: "FEED_REDIS_MASTER_NAME",
    default: "feed",
    minLength: 1,
    maxLength: 64,
    description: "The master's name the sentinels monitor (with REDIS_SENTINELS)",
  }),
  redisKeyPrefix: field.string({
    env: "FEED_REDIS_PREFIX",
    default: "feed:",
    maxLength: 64,
    description: "Prefix of every Redis key this service writes",
  }),
  adminToken: field.string({
    env: "FEED_ADMIN_TOKEN",
    minLength: 16,
    maxLength: 256,
    secret: true,
    description:
      "The operator's bearer token for /v1/admin (users and their API keys; `casebook feed new-key` uses it); unset = no admin API",
  }),
  role: field.enum(["all", "api", "fanout"], {
    env: "FEED_ROLE",
    default: "all",
    description:
      "all = API and fan-out worker in one process; api = the API only; fanout = the fan-out worker only (run as many as you like)",
  }),
  workerId: field.int({
    env: "FEED_WORKER_ID",
    default: 0,
    min: 0,
    max: 1023,
    description: "This process's Snowflake worker id: unique among the processes issuing post ids",
  }),
  timelineCap: field.int({
    env: "FEED_TIMELINE_CAP",
    default: 128,
    min: 10,
    max: 10_000,
    description:
      "Ids kept per home timeline (FD-07/12): 128 keeps Redis's compact listpack encoding (~24 B/entry measured); 129+ switches to a skiplist (~120 B/entry)",
  }),
  timelineTtlS: field.int({
    env: "FEED_TIMELINE_TTL_S",
    default: 7 * 86_400,
    min: 60,
    max: 365 * 86_400,
    description:
      "A timeline unread this long vanishes (FD-12: lists only for active users) and is rebuilt by pull on the next open",
  }),
  fanoutWritesPerS: field.int({
    env: "FEED_FANOUT_WRITES_PER_S",
    default: 40_000,
    min: 1,
    max: 100_000_000,
    description:
      "Measured fan-out capacity, list writes per second across all workers (the bench prints it): the thresholds derive from it",
  }),
  delayTargetMs: field.durationMs({
    env: "FEED_DELAY_TARGET_MS",
    default: 1_000,
    min: 10,
    max: 3_600_000,
    description:
      "Propagation-delay target: a post must be in all its pushed followers' lists within this (FD-08)",
  }),
  activeDays: field.int({
    env: "FEED_ACTIVE_DAYS",
    default: 7,
    min: 1,
    max: 365,
    description:
      "A follower counts as active when they opened their feed in the last N days (the middle tier)",
  }),
  activeShare: field.number({
    env: "FEED_ACTIVE_SHARE",
    default: 0.3,
    min: 0.001,
    max: 1,
    description:
      "Share of users active in the last FEED_ACTIVE_DAYS (measured on your data; the seed graph's is 0.3): sets the line between the push-active and pull tiers",
  }),
  maxRebuilds: field.int({
    env: "FEED_MAX_REBUILDS",
    default: 8,
    min: 1,
    max: 1_000,
    description:
      "Cap on timeline rebuilds running at once in this process (FD-18/19); past it a read gets 206",
  }),
  celebrityCacheTtlMs: field.durationMs({
    env: "FEED_CELEBRITY_CACHE_TTL_MS",
    default: 600_000,
    min: 0,
    max: 86_400_000,
    description:
      "How long a pulled author's recent post ids stay cached beside the lists once read (FD-13; written through on every post, so this bounds memory, not staleness); 0 = no cache, every read asks the database",
  }),
  postCacheTtlMs: field.durationMs({
    env: "FEED_POST_CACHE_TTL_MS",
    default: 86_400_000,
    min: 60_000,
    max: 604_800_000,
    description:
      "How long a post's body (or a deleted post's tombstone) stays cached beside the lists once read (FD-21: edits and deletes write through)",
  }),
  readerViewTtlMs: field.durationMs({
    env: "FEED_READER_VIEW_TTL_MS",
    default: 300_000,
    min: 1_000,
    max: 86_400_000,
    description:
      "How long a reader's cached view (pulled followees, mutes and blocks) is kept; follows and mutes invalidate it at once, so this bounds only an invalidation lost to a Redis failure",
  }),
  keyCacheTtlMs: field.durationMs({
    env: "FEED_KEY_CACHE_TTL_MS",
    default: 5_000,
    min: 0,
    max: 60_000,
    description:
      "How long a verified API key is remembered in this process (saves a database round trip per request); a key revoked through another process keeps working here up to this long; 0 = no cache",
  }),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

/** REDIS_SENTINELS as nodes (the pattern already checked the shape). */
export function sentinelNodesOf(list: string): { host: string; port: number }[] {
  return list.split(",").map((node) => {
    const at = node.lastIndexOf(":");
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  const config = loadConfig(configSchema, { env });
  if (config.role === "fanout" && config.redisUrl === undefined && config.redisSentinels === undefined) {
    throw new ConfigError([
      {
        setting: "redisUrl",
        env: "REDIS_URL",
        source: "missing",
        value: undefined,
        expected: "a redis:// URL",
        message:
          "REDIS_URL: FEED_ROLE=fanout needs it — a separate worker process cannot share an in-process store",
      },
    ]);
  }
  return config;
}

/**
 * A cache node's settings: environment variables, validated at start — a bad value fails the
 * start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all. The
 * node's own port is RESP's (CACHE_PORT, CACHE_HOST); PORT and HOST are the HTTP sidecar's.
 * Cross-field checks follow the per-field ones: CACHE_MAXMEMORY must parse and fit the value
 * arena, and a node bound beyond loopback needs CACHE_REQUIREPASS. Cluster mode's settings
 * (CACHE_CLUSTER_*) are `clusterConfigSchema` (cluster/domain/cluster-settings.ts), read here too.
 *
 * @example
 * const config = loadCacheConfig({ CACHE_PORT: "0", PORT: "0", CACHE_MAXMEMORY: "64mb" });
 * config.maxmemoryBytes; // 67108864
 */
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import { cacheServerDefaults } from "./api/cache-server.ts";
import { clusterConfigSchema } from "./cluster/domain/cluster-settings.ts";
import { bindRefusal } from "./domain/bind-guard.ts";
import { EVICTION_POLICY_NAMES } from "./domain/eviction-policy.ts";
import { DEFAULT_EVICTION_SAMPLES, MAX_EVICTION_SAMPLES } from "./domain/keyspace.ts";
import { humanBytes, parseMemorySize } from "./domain/memory-size.ts";
import { ARENA_MAX_BYTES } from "./domain/value-arena.ts";
import { cacheErrors } from "./errors.ts";

/** Where the HTTP sidecar (/healthz, /readyz, /metrics) listens: PORT and HOST, as every service. */
const sidecar = listenFields({
  port: 8114,
  portDescription: "HTTP sidecar port",
  hostDescription: "HTTP sidecar interface",
});

export const configSchema = {
  // The node's own port is RESP's: CACHE_PORT and CACHE_HOST.
  ...listenFields({
    port: 7000,
    portEnv: "CACHE_PORT",
    hostEnv: "CACHE_HOST",
    portDescription: "RESP (Redis protocol) port",
    hostDescription: "RESP interface (0.0.0.0 for all)",
  }),
  maxmemory: field.string({
    env: "CACHE_MAXMEMORY",
    default: "256mb",
    pattern: /^\d{1,16}(b|k|kb|m|mb|g|gb)?$/i,
    description: "Accounted data limit, Redis units (0 = none; plan ~75% of the RAM given to the node)",
  }),
  policy: field.enum(EVICTION_POLICY_NAMES, {
    env: "CACHE_MAXMEMORY_POLICY",
    default: "allkeys-lru",
    description:
      "What to evict when maxmemory is reached (Redis's policies, or allkeys-w-tinylfu: admission by frequency)",
  }),
  samples: field.int({
    env: "CACHE_MAXMEMORY_SAMPLES",
    default: DEFAULT_EVICTION_SAMPLES,
    min: 1,
    max: MAX_EVICTION_SAMPLES,
    description: "Keys sampled per eviction",
  }),
  requirepass: field.string({
    env: "CACHE_REQUIREPASS",
    default: "",
    secret: true,
    description:
      "The default user's password (Redis's requirepass): clients AUTH with it; required when CACHE_HOST is not loopback",
  }),
  masterauth: field.string({
    env: "CACHE_MASTERAUTH",
    default: "",
    secret: true,
    description:
      "Password this node presents to its primary (replication) and to a MIGRATE target, as Redis's masterauth",
  }),
  masteruser: field.string({
    env: "CACHE_MASTERUSER",
    default: "",
    description: "User for CACHE_MASTERAUTH (Redis's masteruser); empty = default",
  }),
  maxClients: field.int({
    env: "CACHE_MAX_CLIENTS",
    default: cacheServerDefaults.maxClients,
    min: 1,
    max: 1_000_000,
    description: "Open client connections allowed",
  }),
  httpPort: sidecar.port,
  httpHost: sidecar.host,
  ...logLevelField(),
};

export interface CacheConfig extends ConfigOf<typeof configSchema> {
  /** CACHE_MAXMEMORY in bytes. */
  readonly maxmemoryBytes: number;
  /** CACHE_CLUSTER_*: cluster mode's settings. */
  readonly cluster: ConfigOf<typeof clusterConfigSchema>;
}

/** The node's settings, checked field by field and then across fields. */
export function loadCacheConfig(env: NodeJS.ProcessEnv): CacheConfig {
  const config = loadConfig(configSchema, { env });
  const maxmemoryBytes = parseMemorySize(config.maxmemory);
  if (maxmemoryBytes === undefined) {
    throw cacheErrors.create("CACHE_CONFIG_INVALID", {
      fields: { field: "CACHE_MAXMEMORY", expected: "a memory size like 256mb" },
    });
  }
  // CA-13: keys and values live in the value arena (the V8 heap holds none), which addresses ARENA_MAX_BYTES.
  if (maxmemoryBytes > ARENA_MAX_BYTES) {
    throw cacheErrors.create("CACHE_CONFIG_INVALID", {
      detail: `CACHE_MAXMEMORY=${config.maxmemory} is above the ${humanBytes(ARENA_MAX_BYTES)} this node's value arena addresses: lower CACHE_MAXMEMORY or spread the data over more nodes (--nodes)`,
      fields: { field: "CACHE_MAXMEMORY", arenaMaxBytes: ARENA_MAX_BYTES },
    });
  }
  // No unauthenticated service beyond loopback.
  const refusal = bindRefusal(config.host, config.requirepass);
  if (refusal !== undefined) {
    throw cacheErrors.create("CACHE_CONFIG_INVALID", {
      detail: refusal,
      fields: { field: "CACHE_REQUIREPASS", expected: "a password when CACHE_HOST is not loopback" },
    });
  }
  return { ...config, maxmemoryBytes, cluster: loadConfig(clusterConfigSchema, { env }) };
}

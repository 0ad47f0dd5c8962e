/**
 * Composition root of a cache node: config → keyspace → RESP server on CACHE_PORT
 * (7000) → server cron (active expiry) → HTTP sidecar on PORT (8114) with /healthz,
 * /readyz and /metrics. SIGTERM/SIGINT close the sidecar, then the RESP server
 * (stop accepting, flush owed replies, close connections), then the cron.
 *
 * With CACHE_CLUSTER_ENABLED=yes the node is a Redis Cluster member (part 2): a cluster
 * runtime (bus, gossip, failover, replication) and the routing hooks are added. With
 * `--nodes N` on the command line this entry launches a whole local cluster instead
 * (cluster-main.ts).
 *
 * @example
 * // CACHE_MAXMEMORY=64mb CACHE_MAXMEMORY_POLICY=allkeys-lfu node systems/cache/src/main.ts
 * // redis-cli -p 7000 SET k v EX 60
 * // node systems/cache/src/main.ts --nodes 6 --replicas 1    (a local cluster on 7000–7005)
 */

import { join } from "node:path";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { startService } from "@casebook/infra/http/start-service";
import { systemClock } from "@casebook/kit/clock";
import { field, loadConfig } from "@casebook/kit/config";
import { systemRandom } from "@casebook/kit/random";
import { registerCacheMetrics } from "./api/cache-metrics.ts";
import { CacheServer, cacheServerDefaults } from "./api/cache-server.ts";
import { registerClusterMetrics } from "./api/cluster-metrics.ts";
import { createClusterRouter } from "./api/cluster-router.ts";
import { clusterCommands } from "./api/commands/cluster-command.ts";
import { cacheErrors } from "./cache-errors.ts";
import { isClusterLaunch, runClusterEntry } from "./cluster-main.ts";
import { bindRefusal } from "./domain/bind-guard.ts";
import { clusterConfigSchema } from "./domain/cluster-settings.ts";
import { EVICTION_POLICY_NAMES } from "./domain/eviction-policy.ts";
import { DEFAULT_EVICTION_SAMPLES, Keyspace, MAX_EVICTION_SAMPLES } from "./domain/keyspace.ts";
import { humanBytes, parseMemorySize } from "./domain/memory-size.ts";
import { ARENA_MAX_BYTES } from "./domain/value-arena.ts";
import { clusterKeyspaceObserver } from "./workers/cluster-keyspace-observer.ts";
import { ClusterRuntime } from "./workers/cluster-runtime.ts";
import { startServerCron } from "./workers/server-cron.ts";

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

export interface RunningNode {
  readonly server: CacheServer;
  /** Present when CACHE_CLUSTER_ENABLED. */
  readonly cluster: ClusterRuntime | undefined;
  readonly service: Service;
  /** The RESP port and the sidecar's URL. */
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningNode> {
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
  const clusterConfig = loadConfig(clusterConfigSchema, { env });
  const { url, service, built } = await startService({
    service: {
      name: "cache",
      version: "0.1.0",
      log: { level: config.logLevel },
      errors: [cacheErrors],
      description: "Distributed in-memory cache node (seed 004): RESP on CACHE_PORT, ops on this port",
    },
    build: async ({ service }) => {
      let cluster: ClusterRuntime | undefined;
      const keyspace = new Keyspace({
        clock: systemClock,
        random: systemRandom,
        maxmemoryBytes,
        policy: config.policy,
        samples: config.samples,
        ...(clusterConfig.enabled ? { observer: clusterKeyspaceObserver(() => cluster?.source) } : {}),
      });
      if (clusterConfig.enabled) {
        cluster = new ClusterRuntime({
          keyspace,
          clock: systemClock,
          random: systemRandom,
          settings: {
            ...clusterConfig,
            busHost: config.host,
            // Unset: the RESP port + 10000 (Redis's convention), or any free port when RESP has one.
            busPort: clusterConfig.busPort ?? (config.port === 0 ? 0 : config.port + 10_000),
            announceHost:
              clusterConfig.announceHost ?? (config.host === "0.0.0.0" ? "127.0.0.1" : config.host),
          },
          log: service.log.child({ api: "cluster" }),
          masterAuth: () =>
            config.masterauth === ""
              ? undefined
              : {
                  user: config.masteruser === "" ? "default" : config.masteruser,
                  password: config.masterauth,
                },
        });
      }
      const server = new CacheServer({
        keyspace,
        clock: systemClock,
        port: config.port,
        host: config.host,
        maxClients: config.maxClients,
        requirepass: config.requirepass,
        log: service.log.child({ api: "resp" }),
        ...(cluster
          ? {
              extraCommands: clusterCommands(cluster),
              hooks: createClusterRouter(cluster),
              replication: cluster.source,
            }
          : {}),
      });
      // A replica's PSYNC is checked against the same users as a client's AUTH.
      if (cluster) cluster.authorizeReplica = (user, password) => server.acl.allows(user, password);
      const { port } = await server.listen();
      const cron = startServerCron({ keyspace, onTick: () => server.sampleMemoryPeak() });
      registerCacheMetrics(service.registry, server);
      service.addCheck("resp", async () => {
        if (server.port === 0) throw new Error("the RESP server is not listening");
      });
      // Close hooks run last-added first: the RESP server closes, then the cluster runtime, then the cron.
      service.onClose(() => cron.stop());
      if (cluster) {
        const dataRoot = env.CASEBOOK_DATA ?? join(".casebook-data", "cache");
        await cluster.start({ port, dir: clusterConfig.dir ?? join(dataRoot, `node-${port}`) });
        registerClusterMetrics(service.registry, cluster);
        const runtime = cluster;
        service.onClose(() => runtime.close());
      }
      service.onClose(() => server.close());
      return { server, cluster, port };
    },
    listen: { port: config.httpPort, host: config.httpHost },
    listeningMessage: "cache node listening",
    listening: ({ port, cluster }) => ({
      respPort: port,
      maxmemoryBytes,
      policy: config.policy,
      ...(cluster ? { nodeId: cluster.state.myId, busPort: cluster.busPort, ...cluster.announced } : {}),
    }),
  });
  const { server, cluster, port } = built;
  return { server, cluster, service, port, url, close: () => service.close() };
}

if (import.meta.main) {
  const argv = process.argv.slice(2);
  if (isClusterLaunch(argv)) {
    process.exitCode = await runClusterEntry(argv, process.env);
  } else {
    await runServiceEntry({
      name: "cache",
      summary: "a cache node real Redis clients use (seed 004)",
      schema: configSchema,
      usage: [
        "npx casebook run cache                           # one node, RESP on CACHE_PORT",
        "npx casebook run cache --nodes 6 --replicas 1    # a local cluster (--nodes 1 --help: its flags)",
      ],
      notes: "Commands, cluster mode and the failure modes: systems/cache/README.md",
      start: async () => (await main()).service,
    });
  }
}

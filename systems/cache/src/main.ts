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
import { startService } from "@casebook/infra/http/start-service";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { CacheServer } from "./api/cache-server.ts";
import { registerSidecarApi, startRespApi } from "./api/register-api.ts";
import { clusterKeyspaceObserver } from "./cluster/workers/cluster-keyspace-observer.ts";
import { ClusterRuntime } from "./cluster/workers/cluster-runtime.ts";
import { isClusterLaunch, runClusterEntry } from "./cluster-main.ts";
import { configSchema, loadCacheConfig } from "./config.ts";
import { Keyspace } from "./domain/keyspace.ts";
import { cacheErrors } from "./errors.ts";
import { registerCacheScenarios, scenarioErrors } from "./scenarios/register-scenarios.ts";
import { startServerCron } from "./workers/server-cron.ts";

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
  const config = loadCacheConfig(env);
  const { maxmemoryBytes, cluster: clusterConfig } = config;
  const { url, service, built } = await startService({
    service: {
      name: "cache",
      version: "0.1.0",
      log: { level: config.logLevel },
      errors: [cacheErrors, scenarioErrors],
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
      const { server, port } = await startRespApi({
        keyspace,
        clock: systemClock,
        port: config.port,
        host: config.host,
        maxClients: config.maxClients,
        requirepass: config.requirepass,
        log: service.log.child({ api: "resp" }),
        cluster,
      });
      const cron = startServerCron({ keyspace, onTick: () => server.sampleMemoryPeak() });
      registerSidecarApi(service, server, cluster);
      // Close hooks run last-added first: the RESP server closes, then the cluster runtime, then the cron.
      service.onClose(() => cron.stop());
      if (cluster) {
        const dataRoot = env.CASEBOOK_DATA ?? join(".casebook-data", "cache");
        await cluster.start({ port, dir: clusterConfig.dir ?? join(dataRoot, `node-${port}`) });
        const runtime = cluster;
        service.onClose(() => runtime.close());
      }
      service.onClose(() => server.close());
      registerCacheScenarios(service);
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

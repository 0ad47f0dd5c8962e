/**
 * The cache's API wired once, for main.ts and for tests: the RESP server on a keyspace and,
 * on a cluster member, the cluster's commands (CLUSTER, READONLY, ASKING), its routing hooks
 * (MOVED/ASK before a command, replication after it) and its replication stream (WAIT, ROLE),
 * with a replica's PSYNC checked against the same users as a client's AUTH. Then the HTTP
 * sidecar's part: the node's metrics and a readiness check on the RESP listener.
 *
 * The cluster runtime is started by the caller once the RESP port is known (its bus port and
 * announced address derive from it).
 *
 * @example
 * const { server, port } = await startRespApi({ keyspace, clock: systemClock, port: 0, cluster });
 * registerSidecarApi(service, server);
 */
import type { Service } from "@casebook/infra/http/service";
import { registerClusterMetrics } from "../cluster/api/cluster-metrics.ts";
import { createClusterRouter } from "../cluster/api/cluster-router.ts";
import type { ClusterRuntime } from "../cluster/workers/cluster-runtime.ts";
import { registerCacheMetrics } from "../metrics.ts";
import { CacheServer, type CacheServerOptions } from "./cache-server.ts";
import { clusterCommands } from "./commands/cluster-command.ts";

export interface RespApiOptions extends Omit<CacheServerOptions, "extraCommands" | "hooks" | "replication"> {
  /** Present on a cluster member (CACHE_CLUSTER_ENABLED). */
  readonly cluster?: ClusterRuntime | undefined;
}

export interface RespApi {
  readonly server: CacheServer;
  /** The RESP port it listens on (the OS's choice when asked for 0). */
  readonly port: number;
}

/** Builds the RESP server (with the cluster's commands and hooks on a member) and listens. */
export async function startRespApi(options: RespApiOptions): Promise<RespApi> {
  const { cluster, ...serverOptions } = options;
  const server = new CacheServer({
    ...serverOptions,
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
  return { server, port };
}

/** The sidecar's share of the API: the node's metrics (the cluster's too) and RESP readiness. */
export function registerSidecarApi(service: Service, server: CacheServer, cluster?: ClusterRuntime): void {
  registerCacheMetrics(service.registry, server);
  if (cluster) registerClusterMetrics(service.registry, cluster);
  service.addCheck("resp", async () => {
    if (server.port === 0) throw new Error("the RESP server is not listening");
  });
}

/**
 * A node's cluster settings, from the environment (Redis's cluster-* and min-replicas-*
 * directives). Off by default: without CACHE_CLUSTER_ENABLED the node is the standalone
 * cache of part 1. Defaults follow Redis where it has one (node timeout 15 s,
 * full coverage required, backlog 1 MB, bus port = port + 10000).
 *
 * @example
 * const settings = loadConfig(clusterConfigSchema, { env });
 * settings.nodeTimeoutMs; // 15000 unless CACHE_CLUSTER_NODE_TIMEOUT says otherwise
 */
import { field } from "@casebook/kit/config";

/** Redis's offset between a node's client port and its bus port. */
export const BUS_PORT_OFFSET = 10_000;

export const clusterConfigSchema = {
  enabled: field.bool({
    env: "CACHE_CLUSTER_ENABLED",
    default: false,
    description: "Run as a Redis Cluster node (slots, redirects, replication, failover)",
  }),
  dir: field.string({
    env: "CACHE_CLUSTER_DIR",
    description: "Directory of the node's cluster config (default: $CASEBOOK_DATA/node-<port>)",
  }),
  busPort: field.int({
    env: "CACHE_CLUSTER_BUS_PORT",
    min: 0,
    max: 65_535,
    description: "Cluster bus port (default: the RESP port + 10000; 0 = any free port)",
  }),
  announceHost: field.string({
    env: "CACHE_CLUSTER_ANNOUNCE_IP",
    description: "Address other nodes and clients are told (default: the RESP host, 127.0.0.1 for 0.0.0.0)",
  }),
  announcePort: field.int({
    env: "CACHE_CLUSTER_ANNOUNCE_PORT",
    min: 1,
    max: 65_535,
    description: "Client port announced in redirects and CLUSTER SLOTS (default: the RESP port)",
  }),
  announceBusPort: field.int({
    env: "CACHE_CLUSTER_ANNOUNCE_BUS_PORT",
    min: 1,
    max: 65_535,
    description: "Bus port announced to peers, e.g. a proxy in front of the bus (default: the bus port)",
  }),
  nodeTimeoutMs: field.durationMs({
    env: "CACHE_CLUSTER_NODE_TIMEOUT",
    default: 15_000,
    min: 100,
    max: 3_600_000,
    description: "Silence after which a peer is PFAIL, and a minority node stops serving",
  }),
  requireFullCoverage: field.bool({
    env: "CACHE_CLUSTER_REQUIRE_FULL_COVERAGE",
    default: true,
    description: "Refuse every key command while some slot has no live owner",
  }),
  minReplicasToWrite: field.int({
    env: "CACHE_MIN_REPLICAS_TO_WRITE",
    default: 0,
    min: 0,
    max: 16,
    description: "A primary refuses writes (-NOREPLICAS) with fewer good replicas than this",
  }),
  minReplicasMaxLagMs: field.durationMs({
    env: "CACHE_MIN_REPLICAS_MAX_LAG",
    default: 10_000,
    min: 100,
    max: 3_600_000,
    description: "A replica is good while it acknowledged the stream within this lag",
  }),
  backlogBytes: field.int({
    env: "CACHE_REPL_BACKLOG_SIZE",
    default: 1024 * 1024,
    min: 16 * 1024,
    max: 1024 * 1024 * 1024,
    description: "Replication history kept for partial resync, in bytes",
  }),
  replicaOutputLimitBytes: field.int({
    env: "CACHE_REPLICA_OUTPUT_LIMIT",
    default: 256 * 1024 * 1024,
    min: 1024 * 1024,
    max: 4 * 1024 * 1024 * 1024,
    description: "Unsent stream bytes after which a slow replica is dropped (it resyncs)",
  }),
};

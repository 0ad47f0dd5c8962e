/**
 * A cluster node's Prometheus metrics, beside the cache's own (src/metrics.ts): whether
 * it serves (cluster_state), what it knows (nodes, failing nodes, epochs, slots owned),
 * its role, and replication (offset, replicas, their lag in entries). Read at scrape
 * time from the runtime: nothing on the command path.
 *
 * @example
 * registerClusterMetrics(service.registry, runtime);
 * // cache_cluster_state_ok 1
 */
import { scrapedCounter, scrapedGauge } from "@casebook/infra/http/metrics";
import { Counter, type Registry } from "prom-client";
import type { ClusterRuntime } from "../workers/cluster-runtime.ts";

function failingNodes(runtime: ClusterRuntime): number {
  let failing = 0;
  for (const [, health] of runtime.detector.peers()) if (health.fail) failing += 1;
  return failing;
}

function maxReplicaLag(runtime: ClusterRuntime): number {
  let lag = 0;
  for (const replica of runtime.source.replicas())
    lag = Math.max(lag, runtime.source.offset - replica.ackOffset);
  return lag;
}

export function registerClusterMetrics(registry: Registry, runtime: ClusterRuntime): void {
  const started = (read: () => number) => () => (runtime.started ? read() : 0);
  scrapedGauge(
    registry,
    "cache_cluster_state_ok",
    "1 while this node serves keys (coverage and majority).",
    started(() => (runtime.clusterOk() ? 1 : 0)),
  );
  scrapedGauge(
    registry,
    "cache_cluster_known_nodes",
    "Nodes in this node's view.",
    started(() => runtime.state.nodeCount),
  );
  scrapedGauge(
    registry,
    "cache_cluster_failing_nodes",
    "Nodes flagged FAIL by a quorum.",
    started(() => failingNodes(runtime)),
  );
  scrapedGauge(
    registry,
    "cache_cluster_slots_owned",
    "Hash slots this node serves as primary.",
    started(() => runtime.state.slotCount(runtime.state.myId)),
  );
  scrapedGauge(
    registry,
    "cache_cluster_current_epoch",
    "The cluster's logical clock as seen here.",
    started(() => runtime.state.currentEpoch),
  );
  scrapedGauge(
    registry,
    "cache_cluster_config_epoch",
    "This node's config epoch.",
    started(() => runtime.state.myself.configEpoch),
  );
  scrapedGauge(
    registry,
    "cache_cluster_is_primary",
    "1 when this node is a primary.",
    started(() => (runtime.state.myself.role === "primary" ? 1 : 0)),
  );
  scrapedGauge(
    registry,
    "cache_replication_offset",
    "Replication offset (entries) of this node.",
    started(() => (runtime.state.myself.role === "primary" ? runtime.source.offset : runtime.sink.offset)),
  );
  scrapedGauge(
    registry,
    "cache_connected_replicas",
    "Replicas streaming from this primary.",
    () => [...runtime.source.replicas()].length,
  );
  scrapedGauge(
    registry,
    "cache_replica_lag_entries",
    "Entries the slowest replica has not acknowledged.",
    () => maxReplicaLag(runtime),
  );
  new Counter({
    name: "cache_cluster_redirects_total",
    help: "Commands answered with a redirect or a refusal instead of being served, by kind.",
    labelNames: ["kind"],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, count] of Object.entries(runtime.redirects)) this.inc({ kind }, count);
    },
  });
  scrapedCounter(
    registry,
    "cache_cluster_messages_sent_total",
    "Cluster bus messages sent.",
    () => runtime.peers.messages.sent,
  );
  scrapedCounter(
    registry,
    "cache_cluster_messages_received_total",
    "Cluster bus messages received.",
    () => runtime.peers.messages.received,
  );
}

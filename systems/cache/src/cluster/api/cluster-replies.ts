/**
 * Redis Cluster's error replies, word for word: cluster clients parse them (ioredis
 * splits on spaces and follows `MOVED <slot> <host:port>`, retries TRYAGAIN and
 * CLUSTERDOWN after a delay), so they are not ours to reword.
 *
 * @example
 * writer.error(movedError(12739, "127.0.0.1", 7001)); // -MOVED 12739 127.0.0.1:7001
 */

export const CLUSTER_REPLIES = {
  crossSlot: "CROSSSLOT Keys in request don't hash to the same slot",
  tryAgain: "TRYAGAIN Multiple keys request during rehashing of slot",
  down: "CLUSTERDOWN The cluster is down",
  unbound: "CLUSTERDOWN Hash slot not served",
  noReplicas: "NOREPLICAS Not enough good replicas to write.",
  notInCluster: "ERR This instance has cluster support disabled",
  busyKey: "BUSYKEY Target key name already exists.",
  readOnlyReplica: "READONLY You can't write against a read only replica.",
} as const;

export function movedError(slot: number, host: string, port: number): string {
  return `MOVED ${slot} ${host}:${port}`;
}

export function askError(slot: number, host: string, port: number): string {
  return `ASK ${slot} ${host}:${port}`;
}

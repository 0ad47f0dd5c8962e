/**
 * The cache's error registry, grouped by area: the node (wire protocol, connections,
 * configuration, bench), the cluster layer (persisted config, bus, launcher, resharding) and
 * the pure mechanisms (eviction policies, sketch, traces, hash ring). Wire-protocol errors
 * never travel as HTTP: the server turns them into a RESP error line and closes the
 * connection; errors a client sees in cluster mode travel as Redis's own reply lines
 * (-MOVED, -ASK, …, see `cluster/api/cluster-replies.ts`), never as these codes. The client library
 * keeps its own registry (`client/client-errors.ts`): it ships without the server.
 *
 * @example
 * throw cacheErrors.create("CACHE_PROTOCOL_INVALID", { detail: "Protocol error: invalid bulk length" });
 * throw clusterErrors.create("CACHE_CLUSTER_CONFIG_CORRUPT", { fields: { file }, detail: "…" });
 */
import { defineErrors } from "@casebook/kit/errors";

/** The node: wire protocol, connections, configuration, the bench. */
export const cacheErrors = defineErrors({
  CACHE_PROTOCOL_INVALID: {
    status: 400,
    message: "The client sent bytes that are not RESP; the connection is closed. Use a Redis client library.",
  },
  CACHE_QUERY_TOO_LARGE: {
    status: 413,
    message:
      "The client sent a request larger than the query buffer limit; split big values or raise the limit.",
  },
  CACHE_MAX_CLIENTS: {
    status: 503,
    message: "The node has reached its connection limit; pool connections or raise CACHE_MAX_CLIENTS.",
  },
  CACHE_CONFIG_INVALID: {
    status: 400,
    message: "A cache setting is invalid; see `field` for the setting and `expected` for valid values.",
  },
  CACHE_BENCH_ARGS_INVALID: {
    status: 400,
    message: "A bench flag is invalid; run the bench with --help for the flags and their ranges.",
  },
  CACHE_BENCH_TOOL_FAILED: {
    status: 500,
    message: "redis-benchmark failed or printed no result; see `stderr` for its output.",
  },
});

export type CacheErrorCode = keyof typeof cacheErrors.specs;

/** The cluster layer (seed 004 part 2): the persisted config, the bus, the launcher, resharding. */
export const clusterErrors = defineErrors({
  CACHE_CLUSTER_CONFIG_CORRUPT: {
    status: 500,
    message:
      "The node's cluster config file cannot be read; fix or delete it (deleting makes the node a new, empty member).",
  },
  CACHE_CLUSTER_MESSAGE_INVALID: {
    status: 400,
    message: "A cluster bus peer sent a message this node cannot read; the link is closed.",
  },
  CACHE_CLUSTER_LAUNCH_FAILED: {
    status: 500,
    message: "The local cluster did not start; `node` names the node and `output` holds its last log lines.",
  },
  CACHE_CLUSTER_ADMIN_FAILED: {
    status: 502,
    message: "A cluster node answered an admin command with an error, or did not answer in time.",
  },
  CACHE_CLUSTER_RESHARD_FAILED: {
    status: 500,
    message:
      "Moving slots between nodes stopped half way; the slots named in `slot` stay MIGRATING/IMPORTING until the reshard is run again.",
  },
  CACHE_CLUSTER_PORT_TAKEN: {
    status: 409,
    message:
      "A port the local cluster needs (a node's RESP or cluster bus port, or the launcher's) cannot be bound; pick another base with --port or CACHE_PORT.",
  },
  CACHE_CLUSTER_ARGS_INVALID: {
    status: 400,
    message: "A cluster launcher flag is invalid; run with --help for the flags and their ranges.",
  },
});

export type ClusterErrorCode = keyof typeof clusterErrors.specs;

/** The pure mechanisms: eviction policies, the sketch, traces, the hash ring (a bad setting fails the start). */
export const policyErrors = defineErrors({
  CACHE_POLICY_CONFIG_INVALID: {
    status: 400,
    message: "A cache policy option is out of range; `field` names it and `expected` says what it accepts.",
  },
  CACHE_WEIGHT_INVALID: {
    status: 400,
    message: "An entry's weight must be an integer >= 0: its size in bytes, or 1 to count entries.",
  },
  CACHE_TRACE_INVALID: {
    status: 400,
    message: "A trace holds request keys as integers in [0, maxKeyId]; `field` names what is out of range.",
  },
  CACHE_RING_EMPTY: {
    status: 503,
    message: "The hash ring has no nodes, so no key has an owner; add a node first.",
  },
  CACHE_RING_NODE_EXISTS: {
    status: 409,
    message: "This node is already on the ring; remove it first to change its virtual node count.",
  },
  CACHE_RING_NODE_UNKNOWN: {
    status: 404,
    message: "This node is not on the ring; `node` names it.",
  },
});

export type PolicyErrorCode = keyof typeof policyErrors.specs;

/**
 * Throws CACHE_POLICY_CONFIG_INVALID unless `value` is an integer in [min, max].
 *
 * @example
 * requireInteger("maxEntries", options.maxEntries, 1, 2 ** 31);
 */
export function requireInteger(field: string, value: number, min: number, max: number): void {
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    throw policyErrors.create("CACHE_POLICY_CONFIG_INVALID", {
      fields: { field, expected: `an integer in [${min}, ${max}]`, got: String(value) },
    });
  }
}

/**
 * Throws CACHE_POLICY_CONFIG_INVALID unless `value` is a number in [min, max].
 *
 * @example
 * requireNumber("windowFraction", 0.01, 0, 1);
 */
export function requireNumber(field: string, value: number, min: number, max: number): void {
  if (!(typeof value === "number" && value >= min && value <= max)) {
    throw policyErrors.create("CACHE_POLICY_CONFIG_INVALID", {
      fields: { field, expected: `a number in [${min}, ${max}]`, got: String(value) },
    });
  }
}

/**
 * Throws CACHE_WEIGHT_INVALID unless `weight` is a safe integer >= 0 (integers, so the
 * running total never drifts the way a sum of fractions does).
 *
 * @example
 * requireWeight("user:1", 1_024);
 */
export function requireWeight(key: unknown, weight: number): void {
  if (!(Number.isSafeInteger(weight) && weight >= 0)) {
    throw policyErrors.create("CACHE_WEIGHT_INVALID", {
      fields: { key: String(key), weight: String(weight) },
    });
  }
}

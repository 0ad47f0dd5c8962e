/**
 * Error codes of the cluster layer (seed 004 part 2): the persisted config, the bus
 * between nodes, the launcher and the resharding tool. Kept in their own registry, like
 * `policy-errors.ts`, until the lead merges the cache's registries. Errors a client sees
 * travel as Redis's own reply lines (-MOVED, -ASK, -CROSSSLOT, -CLUSTERDOWN, -NOREPLICAS,
 * see `cluster-replies.ts`), never as these codes.
 *
 * @example
 * throw clusterErrors.create("CACHE_CLUSTER_CONFIG_CORRUPT", { fields: { file }, detail: "…" });
 */
import { defineErrors } from "@casebook/kit/errors";

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

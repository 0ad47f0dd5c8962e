/**
 * CLUSTER, the container of the cluster subcommands (cluster-info-commands.ts and
 * cluster-admin-commands.ts), with Redis's HELP. Registered only on a node started
 * with CACHE_CLUSTER_ENABLED.
 *
 * @example
 * const table = createCommandTable([...allCommands, ...clusterCommands(runtime)], createClusterRouter(runtime));
 */

import type { ClusterRuntime } from "../../cluster/workers/cluster-runtime.ts";
import { clusterAdminCommands } from "./cluster-admin-commands.ts";
import { clusterClientCommands } from "./cluster-client-commands.ts";
import { clusterInfoCommands } from "./cluster-info-commands.ts";
import { migrateCommand } from "./cluster-migrate-command.ts";
import { type CommandSpec, NO_KEYS } from "./command-spec.ts";
import { dispatchSubcommand, helpSubcommand } from "./command-table.ts";

const CLUSTER_HELP = [
  "CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "ADDSLOTS <slot> [<slot> ...]",
  "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
  "BUMPEPOCH",
  "COUNT-FAILURE-REPORTS <node-id>",
  "COUNTKEYSINSLOT <slot>",
  "FAILOVER TAKEOVER",
  "GETKEYSINSLOT <slot> <count>",
  "INFO",
  "KEYSLOT <key>",
  "MEET <ip> <port> [<bus-port>]",
  "MYID",
  "NODES",
  "REPLICATE <node-id>",
  "SAVECONFIG",
  "SET-CONFIG-EPOCH <epoch>",
  "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
  "SHARDS",
  "SLOTS",
  "HELP",
  "    Print this help.",
];

function clusterCommand(runtime: ClusterRuntime): CommandSpec {
  const subcommands: CommandSpec[] = [
    ...clusterInfoCommands(runtime),
    ...clusterAdminCommands(runtime),
    helpSubcommand("cluster", CLUSTER_HELP, { since: "5.0.0", group: "cluster" }),
  ];
  return {
    name: "cluster",
    arity: -2,
    flags: [],
    keys: NO_KEYS,
    acl: ["@slow"],
    doc: {
      summary: "A container for Redis Cluster commands.",
      since: "3.0.0",
      group: "cluster",
      complexity: "Depends on subcommand.",
    },
    subcommands,
    run: (ctx, args) => dispatchSubcommand("cluster", subcommands, ctx, args),
  };
}

/** Every command a cluster node adds to the standalone table. */
export function clusterCommands(runtime: ClusterRuntime): CommandSpec[] {
  return [clusterCommand(runtime), ...clusterClientCommands(runtime), migrateCommand(runtime)];
}

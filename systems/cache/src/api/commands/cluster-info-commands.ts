/**
 * The read-only CLUSTER subcommands: KEYSLOT (CA-05: kit's CRC16/XMODEM with hash tags),
 * MYID, INFO, NODES, SLOTS, SHARDS, COUNTKEYSINSLOT, GETKEYSINSLOT (what a reshard walks)
 * and COUNT-FAILURE-REPORTS (CA-15's reports, for a curious operator).
 *
 * @example
 * // CLUSTER KEYSLOT 123456789 → 12739 (0x31C3)
 * // CLUSTER GETKEYSINSLOT 12739 10 → up to 10 keys of that slot on this node
 */

import { keySlot } from "@casebook/kit/cluster-slot";
import {
  clusterInfoText,
  clusterNodesText,
  writeClusterShards,
  writeClusterSlots,
} from "../../cluster/api/cluster-topology.ts";
import type { ClusterRuntime } from "../../cluster/workers/cluster-runtime.ts";
import { parseInt64 } from "../../domain/integer-arg.ts";
import { parseSlot } from "../../domain/slot-ranges.ts";
import { type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";

const doc = (summary: string, since: string, complexity = "O(1)") =>
  ({ summary, since, group: "cluster", complexity }) as const;

function spec(
  name: string,
  arity: number,
  summary: string,
  since: string,
  run: (ctx: CommandContext, args: readonly string[]) => void,
): CommandSpec {
  return {
    name: `cluster|${name}`,
    arity,
    flags: ["loading", "stale"],
    keys: NO_KEYS,
    acl: ["@slow"],
    doc: doc(summary, since),
    run,
  };
}

function countKeysInSlot(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const slot = parseSlot(args[2]!);
  if (slot === undefined) {
    ctx.reply.error("ERR Invalid slot");
    return;
  }
  ctx.reply.integer(runtime.slotIndex.count(slot));
}

function getKeysInSlot(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const slot = parseSlot(args[2]!);
  const count = parseInt64(args[3]!);
  if (slot === undefined || typeof count !== "number" || count < 0) {
    ctx.reply.error("ERR Invalid slot or number of keys");
    return;
  }
  const keys = runtime.slotIndex.keys(slot, count);
  ctx.reply.arrayHeader(keys.length);
  for (const key of keys) ctx.reply.bulk(key);
}

function countFailureReports(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const id = args[2]!;
  if (runtime.state.node(id) === undefined) {
    ctx.reply.error(`ERR Unknown node ${id}`);
    return;
  }
  ctx.reply.integer(runtime.detector.reportCount(id, runtime.clock.monotonicMs(), () => true));
}

export function clusterInfoCommands(runtime: ClusterRuntime): CommandSpec[] {
  return [
    spec("keyslot", 3, "Returns the hash slot for a key.", "3.0.0", (ctx, args) =>
      ctx.reply.integer(keySlot(args[2]!)),
    ),
    spec("myid", 2, "Returns the ID of a node.", "3.0.0", (ctx) => ctx.reply.bulk(runtime.state.myId)),
    spec("info", 2, "Returns information about the state of a node.", "3.0.0", (ctx) =>
      ctx.reply.verbatim(clusterInfoText(runtime)),
    ),
    spec("nodes", 2, "Returns the cluster configuration for a node.", "3.0.0", (ctx) =>
      ctx.reply.verbatim(clusterNodesText(runtime)),
    ),
    spec("slots", 2, "Returns the mapping of cluster slots to nodes.", "3.0.0", (ctx) =>
      writeClusterSlots(runtime, ctx.reply),
    ),
    spec("shards", 2, "Returns the mapping of cluster slots to shards.", "7.0.0", (ctx) =>
      writeClusterShards(runtime, ctx.reply),
    ),
    spec("countkeysinslot", 3, "Returns the number of keys in a hash slot.", "3.0.0", (ctx, args) =>
      countKeysInSlot(runtime, ctx, args),
    ),
    spec("getkeysinslot", 4, "Returns the key names in a hash slot.", "3.0.0", (ctx, args) =>
      getKeysInSlot(runtime, ctx, args),
    ),
    spec(
      "count-failure-reports",
      3,
      "Returns the number of active failure reports active for a node.",
      "3.0.0",
      (ctx, args) => countFailureReports(runtime, ctx, args),
    ),
  ];
}

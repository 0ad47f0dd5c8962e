/**
 * The CLUSTER subcommands that change the view, with Redis's rules and error texts:
 * MEET (join), ADDSLOTS / ADDSLOTSRANGE (serve unowned slots), SETSLOT (the four steps
 * of a live reshard: IMPORTING on the target, MIGRATING on the source, NODE when the keys
 * have moved, STABLE to abort), REPLICATE, SET-CONFIG-EPOCH (distinct epochs at
 * creation), BUMPEPOCH, FAILOVER TAKEOVER and SAVECONFIG. Changes are persisted once per
 * batch of commands (see ClusterRuntime.requestSave); SAVECONFIG saves before replying.
 *
 * @example
 * // target: CLUSTER SETSLOT 42 IMPORTING <source-id>
 * // source: CLUSTER SETSLOT 42 MIGRATING <target-id>
 * // source: MIGRATE … KEYS k1 k2          (until GETKEYSINSLOT 42 is empty)
 * // target, source: CLUSTER SETSLOT 42 NODE <target-id>
 */

import { BUS_PORT_OFFSET } from "../../cluster/domain/cluster-settings.ts";
import type { ClusterRuntime } from "../../cluster/workers/cluster-runtime.ts";
import { parseInt64 } from "../../domain/integer-arg.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { parseSlot } from "../../domain/slot-ranges.ts";
import { type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";

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
    flags: ["admin", "stale", "noscript"],
    keys: NO_KEYS,
    acl: ["@admin", "@slow", "@dangerous"],
    doc: { summary, since, group: "cluster", complexity: "O(N)" },
    run,
  };
}

function ok(runtime: ClusterRuntime, ctx: CommandContext): void {
  runtime.requestSave();
  ctx.reply.simple("OK");
}

function port(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,5}$/.test(text)) return undefined;
  const value = Number(text);
  return value >= 1 && value <= 65_535 ? value : undefined;
}

function meet(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const clientPort = port(args[3]);
  const busPort =
    args.length > 4 ? port(args[4]) : clientPort === undefined ? undefined : clientPort + BUS_PORT_OFFSET;
  if (clientPort === undefined || busPort === undefined || busPort > 65_535) {
    ctx.reply.error(`ERR Invalid node address specified: ${args[2]}:${args[3]}`);
    return;
  }
  runtime.meet(args[2]!, clientPort, busPort);
  ctx.reply.simple("OK");
}

/** Assigns `slots` to this node if every one is valid and free (all or nothing). */
function addSlots(
  runtime: ClusterRuntime,
  ctx: CommandContext,
  slots: readonly (number | undefined)[],
): void {
  const state = runtime.state;
  if (state.myself.role !== "primary") {
    ctx.reply.error("ERR Please use ADDSLOTS only with masters.");
    return;
  }
  const seen = new Set<number>();
  for (const slot of slots) {
    if (slot === undefined) {
      ctx.reply.error("ERR Invalid or out of range slot");
      return;
    }
    if (state.owner(slot) !== undefined) {
      ctx.reply.error(`ERR Slot ${slot} is already busy`);
      return;
    }
    if (seen.has(slot)) {
      ctx.reply.error(`ERR Slot ${slot} specified multiple times`);
      return;
    }
    seen.add(slot);
  }
  for (const slot of seen) {
    state.importing.delete(slot);
    state.assign(slot, state.myId);
  }
  ok(runtime, ctx);
}

function addSlotsRange(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  if ((args.length - 2) % 2 !== 0) {
    ctx.reply.error("ERR wrong number of arguments for 'cluster|addslotsrange' command");
    return;
  }
  const slots: Array<number | undefined> = [];
  for (let i = 2; i < args.length; i += 2) {
    const first = parseSlot(args[i]!);
    const last = parseSlot(args[i + 1]!);
    if (first === undefined || last === undefined) {
      slots.push(undefined);
      break;
    }
    if (first > last) {
      ctx.reply.error(`ERR start slot number ${first} is greater than end slot number ${last}`);
      return;
    }
    for (let slot = first; slot <= last; slot++) slots.push(slot);
  }
  addSlots(runtime, ctx, slots);
}

function setSlotNode(runtime: ClusterRuntime, ctx: CommandContext, slot: number, nodeId: string): void {
  const state = runtime.state;
  const target = state.node(nodeId);
  if (target === undefined) {
    ctx.reply.error(`ERR I don't know about node ${nodeId}`);
    return;
  }
  if (target.role !== "primary") {
    ctx.reply.error("ERR Target node is not a master");
    return;
  }
  const keys = runtime.slotIndex.count(slot);
  if (state.owner(slot) === state.myId && nodeId !== state.myId && keys > 0) {
    ctx.reply.error(
      `ERR Can't assign hashslot ${slot} to a different node while I still hold keys for this hash slot.`,
    );
    return;
  }
  if (keys === 0) state.migrating.delete(slot);
  state.assign(slot, nodeId);
  if (nodeId === state.myId && state.importing.delete(slot)) {
    // The new owner's claim must outrank the old owner's everywhere: take a fresh epoch, and say so now.
    state.bumpConfigEpochWithoutConsensus();
    runtime.announceSoon();
  }
  state.touch();
  ok(runtime, ctx);
}

function setSlot(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const state = runtime.state;
  if (state.myself.role !== "primary") {
    ctx.reply.error("ERR Please use SETSLOT only with masters.");
    return;
  }
  const slot = parseSlot(args[2]!);
  if (slot === undefined) {
    ctx.reply.error("ERR Invalid or out of range slot");
    return;
  }
  const action = args[3]!.toLowerCase();
  const nodeId = args[4];
  if (action === "stable" && args.length === 4) {
    state.migrating.delete(slot);
    state.importing.delete(slot);
    state.touch();
    ok(runtime, ctx);
    return;
  }
  if (nodeId === undefined || args.length !== 5) {
    ctx.reply.error(REPLY_ERRORS.syntax);
    return;
  }
  if (action === "node") {
    setSlotNode(runtime, ctx, slot, nodeId);
    return;
  }
  const other = state.node(nodeId);
  if (action !== "migrating" && action !== "importing") {
    ctx.reply.error("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP");
    return;
  }
  if (other === undefined) {
    ctx.reply.error(`ERR I don't know about node ${nodeId}`);
    return;
  }
  if (other.role !== "primary") {
    ctx.reply.error(`ERR ${action === "migrating" ? "Target" : "Source"} node is not a master`);
    return;
  }
  const owned = state.owner(slot) === state.myId;
  if (action === "migrating" && !owned) {
    ctx.reply.error(`ERR I'm not the owner of hash slot ${slot}`);
    return;
  }
  if (action === "importing" && owned) {
    ctx.reply.error(`ERR I'm already the owner of hash slot ${slot}`);
    return;
  }
  (action === "migrating" ? state.migrating : state.importing).set(slot, nodeId);
  state.touch();
  ok(runtime, ctx);
}

function replicate(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const state = runtime.state;
  const primary = state.node(args[2]!);
  if (primary === undefined) {
    ctx.reply.error(`ERR Unknown node ${args[2]}`);
    return;
  }
  if (primary.id === state.myId) {
    ctx.reply.error("ERR Can't replicate myself");
    return;
  }
  if (primary.role !== "primary") {
    ctx.reply.error("ERR I can only replicate a master, not a replica.");
    return;
  }
  const me = state.myself;
  if (me.role === "primary" && (state.slotCount(me.id) > 0 || runtime.keyspace.size > 0)) {
    ctx.reply.error("ERR To set a master the node must be empty and without assigned slots.");
    return;
  }
  runtime.follow(primary.id);
  ok(runtime, ctx);
}

function setConfigEpoch(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const state = runtime.state;
  const epoch = parseInt64(args[2]!);
  if (typeof epoch !== "number" || epoch < 0) {
    ctx.reply.error(`ERR Invalid config epoch specified: ${args[2]}`);
    return;
  }
  if (state.nodeCount > 1) {
    ctx.reply.error(
      "ERR The user can assign a config epoch only when the node does not know any other node.",
    );
    return;
  }
  if (state.myself.configEpoch !== 0) {
    ctx.reply.error("ERR Node config epoch is already non-zero");
    return;
  }
  state.myself.configEpoch = epoch;
  state.observeEpoch(epoch);
  state.touch();
  ok(runtime, ctx);
}

function failover(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const state = runtime.state;
  if (state.myself.role !== "replica") {
    ctx.reply.error("ERR You should send CLUSTER FAILOVER to a replica");
    return;
  }
  if (args.length !== 3 || args[2]!.toLowerCase() !== "takeover") {
    // Only the operator's override: promote without votes (Redis's TAKEOVER).
    ctx.reply.error("ERR only CLUSTER FAILOVER TAKEOVER is supported; automatic failover needs no command");
    return;
  }
  state.currentEpoch += 1;
  runtime.promote(state.currentEpoch);
  ok(runtime, ctx);
}

function bumpEpoch(runtime: ClusterRuntime, ctx: CommandContext): void {
  const bumped = runtime.state.bumpConfigEpochWithoutConsensus();
  runtime.requestSave();
  ctx.reply.simple(`${bumped ? "BUMPED" : "STILL"} ${runtime.state.myself.configEpoch}`);
}

export function clusterAdminCommands(runtime: ClusterRuntime): CommandSpec[] {
  return [
    spec("meet", -4, "Forces a node to handshake with another node.", "3.0.0", (ctx, args) =>
      meet(runtime, ctx, args),
    ),
    spec("addslots", -3, "Assigns new hash slots to a node.", "3.0.0", (ctx, args) =>
      addSlots(runtime, ctx, args.slice(2).map(parseSlot)),
    ),
    spec("addslotsrange", -4, "Assigns new hash slot ranges to a node.", "7.0.0", (ctx, args) =>
      addSlotsRange(runtime, ctx, args),
    ),
    spec("setslot", -4, "Binds a hash slot to a node.", "3.0.0", (ctx, args) => setSlot(runtime, ctx, args)),
    spec("replicate", 3, "Configure a node as replica of a master node.", "3.0.0", (ctx, args) =>
      replicate(runtime, ctx, args),
    ),
    spec("set-config-epoch", 3, "Sets the configuration epoch for a new node.", "3.0.0", (ctx, args) =>
      setConfigEpoch(runtime, ctx, args),
    ),
    spec("bumpepoch", 2, "Advances the cluster config epoch.", "3.0.0", (ctx) => bumpEpoch(runtime, ctx)),
    spec(
      "failover",
      -2,
      "Forces a replica to perform a manual failover of its master.",
      "3.0.0",
      (ctx, args) => failover(runtime, ctx, args),
    ),
    spec("saveconfig", 2, "Forces a node to save the cluster configuration to disk.", "3.0.0", (ctx) => {
      runtime.saveConfig();
      ctx.reply.simple("OK");
    }),
  ];
}

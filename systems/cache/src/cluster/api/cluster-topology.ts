/**
 * The cluster as clients and tools read it, in Redis's formats: CLUSTER NODES (one
 * line per node: id, address@bus, flags, primary, ping/pong times, configEpoch, link,
 * slots), CLUSTER SLOTS (what ioredis reads to build its slot map: ranges with the
 * primary first, then its replicas), CLUSTER SHARDS and CLUSTER INFO.
 *
 * @example
 * clusterNodesText(runtime);
 * // "e7d1… 127.0.0.1:7000@17000 myself,master - 0 0 1 connected 0-5460\n…"
 */

import type { ReplyWriter } from "../../api/resp-writer.ts";
import { formatRanges, SLOT_COUNT, toRanges } from "../../domain/slot-ranges.ts";
import type { ClusterNodeRecord } from "../domain/cluster-state.ts";
import type { ClusterRuntime } from "../workers/cluster-runtime.ts";

export interface OwnedRange {
  readonly first: number;
  readonly last: number;
  readonly ownerId: string;
}

/** Maximal runs of consecutive slots with one owner, ascending. */
export function ownedRanges(runtime: ClusterRuntime): OwnedRange[] {
  const state = runtime.state;
  const ranges: OwnedRange[] = [];
  let current: { first: number; last: number; ownerId: string } | undefined;
  for (let slot = 0; slot < SLOT_COUNT; slot++) {
    const ownerId = state.owner(slot);
    if (current !== undefined && ownerId === current.ownerId && slot === current.last + 1) {
      current.last = slot;
      continue;
    }
    if (current !== undefined) ranges.push(current);
    current = ownerId === undefined ? undefined : { first: slot, last: slot, ownerId };
  }
  if (current !== undefined) ranges.push(current);
  return ranges;
}

/** Redis's flags column: myself, master|slave, fail?, fail. */
export function nodeFlags(runtime: ClusterRuntime, node: ClusterNodeRecord): string {
  const flags: string[] = [];
  if (node.id === runtime.state.myId) flags.push("myself");
  flags.push(node.role === "primary" ? "master" : "slave");
  const health = runtime.detector.health(node.id);
  if (health?.fail) flags.push("fail");
  else if (health?.pfail) flags.push("fail?");
  return flags.join(",");
}

function nodeLine(runtime: ClusterRuntime, node: ClusterNodeRecord): string {
  const state = runtime.state;
  const health = runtime.detector.health(node.id);
  const mine = node.id === state.myId;
  const pingSent = mine ? 0 : runtime.wallMs(health?.pingSentMs ?? 0);
  const pongReceived = mine ? 0 : runtime.wallMs(health?.pongMs ?? 0);
  const link = runtime.linkConnected(node.id) ? "connected" : "disconnected";
  const parts = [
    node.id,
    `${node.host}:${node.port}@${node.busPort}`,
    nodeFlags(runtime, node),
    node.primaryId ?? "-",
    String(pingSent),
    String(pongReceived),
    String(node.configEpoch),
    link,
  ];
  const slots = formatRanges(toRanges(state.slotsOf(node.id)));
  if (slots !== "") parts.push(...slots.split(","));
  if (mine) {
    for (const [slot, target] of state.migrating) parts.push(`[${slot}->-${target}]`);
    for (const [slot, source] of state.importing) parts.push(`[${slot}-<-${source}]`);
  }
  return parts.join(" ");
}

export function clusterNodesText(runtime: ClusterRuntime): string {
  const lines = [...runtime.state.nodes()].map((node) => nodeLine(runtime, node));
  return `${lines.join("\n")}\n`;
}

/** Replicas of `primaryId` that are not FAIL: where READONLY clients may read. */
function liveReplicas(runtime: ClusterRuntime, primaryId: string): ClusterNodeRecord[] {
  return runtime.state.replicasOf(primaryId).filter((replica) => !runtime.detector.isFailing(replica.id));
}

function writeNodeEntry(reply: ReplyWriter, node: ClusterNodeRecord): void {
  reply.arrayHeader(4);
  reply.bulk(node.host);
  reply.integer(node.port);
  reply.bulk(node.id);
  reply.mapHeader(0);
}

export function writeClusterSlots(runtime: ClusterRuntime, reply: ReplyWriter): void {
  const ranges = ownedRanges(runtime);
  reply.arrayHeader(ranges.length);
  for (const range of ranges) {
    const owner = runtime.state.node(range.ownerId)!;
    const replicas = liveReplicas(runtime, owner.id);
    reply.arrayHeader(3 + replicas.length);
    reply.integer(range.first);
    reply.integer(range.last);
    writeNodeEntry(reply, owner);
    for (const replica of replicas) writeNodeEntry(reply, replica);
  }
}

function writeShardNode(runtime: ClusterRuntime, reply: ReplyWriter, node: ClusterNodeRecord): void {
  const mine = node.id === runtime.state.myId;
  const offset = mine
    ? node.role === "primary"
      ? runtime.source.offset
      : runtime.sink.offset
    : (runtime.offsets.get(node.id) ?? 0);
  reply.mapHeader(7);
  reply.bulk("id");
  reply.bulk(node.id);
  reply.bulk("port");
  reply.integer(node.port);
  reply.bulk("ip");
  reply.bulk(node.host);
  reply.bulk("endpoint");
  reply.bulk(node.host);
  reply.bulk("role");
  reply.bulk(node.role === "primary" ? "master" : "replica");
  reply.bulk("replication-offset");
  reply.integer(offset);
  reply.bulk("health");
  reply.bulk(runtime.detector.isFailing(node.id) ? "fail" : "online");
}

export function writeClusterShards(runtime: ClusterRuntime, reply: ReplyWriter): void {
  const state = runtime.state;
  const primaries = [...state.nodes()].filter((node) => node.role === "primary");
  reply.arrayHeader(primaries.length);
  for (const primary of primaries) {
    const ranges = toRanges(state.slotsOf(primary.id));
    const members = [primary, ...state.replicasOf(primary.id)];
    reply.mapHeader(2);
    reply.bulk("slots");
    reply.arrayHeader(ranges.length * 2);
    for (const [first, last] of ranges) {
      reply.integer(first);
      reply.integer(last);
    }
    reply.bulk("nodes");
    reply.arrayHeader(members.length);
    for (const member of members) writeShardNode(runtime, reply, member);
  }
}

export function clusterInfoText(runtime: ClusterRuntime): string {
  const state = runtime.state;
  let pfail = 0;
  let fail = 0;
  for (const node of state.nodes()) {
    const health = runtime.detector.health(node.id);
    const slots = state.slotCount(node.id);
    if (health?.fail) fail += slots;
    else if (health?.pfail) pfail += slots;
  }
  const assigned = state.assignedSlots();
  const fields: Array<[string, string | number]> = [
    ["cluster_state", runtime.clusterOk() ? "ok" : "fail"],
    ["cluster_slots_assigned", assigned],
    ["cluster_slots_ok", assigned - pfail - fail],
    ["cluster_slots_pfail", pfail],
    ["cluster_slots_fail", fail],
    ["cluster_known_nodes", state.nodeCount],
    ["cluster_size", state.voters().length],
    ["cluster_current_epoch", state.currentEpoch],
    ["cluster_my_epoch", state.myself.configEpoch],
    ["cluster_stats_messages_sent", runtime.peers.messages.sent],
    ["cluster_stats_messages_received", runtime.peers.messages.received],
    // Not in Redis: what this node answered instead of serving, so a reshard or a failover can be watched.
    ...Object.entries(runtime.redirects).map(([kind, count]): [string, number] => [
      `cluster_stats_redirects_${kind}`,
      count,
    ]),
  ];
  return `${fields.map(([name, value]) => `${name}:${value}`).join("\r\n")}\r\n`;
}

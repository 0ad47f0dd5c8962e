/**
 * What nodes tell each other on every PING / PONG / MEET (Redis's clusterMsg header):
 * the sender's address, role, epochs and slots, plus gossip about other nodes (address
 * and whether the sender sees them failing — the failure reports of CA-15). Also the
 * vote request of an election, and UPDATE (a newer owner's claim, for a stale sender). Sent as JSON inside a bus frame; everything read from the
 * network is validated here before the state sees it.
 *
 * @example
 * const text = JSON.stringify(header);
 * parseHeader(text);  // the same header, or CACHE_CLUSTER_MESSAGE_INVALID
 */

import { parseRanges, type SlotRange } from "../../domain/slot-ranges.ts";
import { clusterErrors } from "../../errors.ts";
import type { ClusterState, NodeRole } from "./cluster-state.ts";

export type GossipFlag = "ok" | "pfail" | "fail";

export interface GossipEntry {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly busPort: number;
  readonly flag: GossipFlag;
}

export interface NodeHeader {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly busPort: number;
  readonly role: NodeRole;
  readonly primaryId: string | undefined;
  readonly currentEpoch: number;
  /** The sender's configEpoch, or its primary's for a replica (what its slots are worth). */
  readonly configEpoch: number;
  /** The slots the sender claims (its primary's for a replica), as `formatRanges` text. */
  readonly slots: string;
  /** Replication offset: a primary's stream, a replica's applied position (ranks replicas). */
  readonly offset: number;
  readonly gossip: readonly GossipEntry[];
}

export interface VoteRequestMessage {
  readonly requesterId: string;
  readonly epoch: number;
  readonly claimedConfigEpoch: number;
  readonly slots: string;
}

/** Node ids: 40 hex chars, as Redis's. */
export const NODE_ID_PATTERN = /^[0-9a-f]{40}$/;
/** Bound on gossip entries per message. */
export const MAX_GOSSIP_ENTRIES = 64;

/** What the header needs of the node beyond its view: how it sees each peer, its offset, its slots' text. */
export interface HeaderView {
  /** How this node sees peer `id` (its failure detector's verdict). */
  flagOf(id: string): GossipFlag;
  /** The replication offset the header carries. */
  readonly offset: number;
  /** The slots `ownerId` holds, as formatRanges text (the caller may cache it per view version). */
  slotsText(ownerId: string): string;
}

/**
 * The header this node sends on every PING, PONG and MEET: its address and role; a replica
 * claims its primary's slots at its primary's configEpoch; gossip on up to
 * MAX_GOSSIP_ENTRIES peers, failing ones first (when the list is cut, the failure reports are
 * what must travel).
 *
 * @example
 * JSON.stringify(nodeHeader(state, { flagOf: () => "ok", offset: 0, slotsText: (id) => formatRanges(toRanges(state.slotsOf(id))) }));
 */
export function nodeHeader(state: ClusterState, view: HeaderView): NodeHeader {
  const me = state.myself;
  const primary = me.role === "replica" && me.primaryId !== undefined ? state.node(me.primaryId) : me;
  const gossip: GossipEntry[] = [];
  for (const node of state.nodes()) {
    if (node.id === state.myId) continue;
    gossip.push({
      id: node.id,
      host: node.host,
      port: node.port,
      busPort: node.busPort,
      flag: view.flagOf(node.id),
    });
  }
  gossip.sort((a, b) => Number(b.flag !== "ok") - Number(a.flag !== "ok"));
  return {
    id: me.id,
    host: me.host,
    port: me.port,
    busPort: me.busPort,
    role: me.role,
    primaryId: me.primaryId,
    currentEpoch: state.currentEpoch,
    configEpoch: primary?.configEpoch ?? me.configEpoch,
    slots: view.slotsText(primary?.id ?? me.id),
    offset: view.offset,
    gossip: gossip.slice(0, MAX_GOSSIP_ENTRIES),
  };
}

function invalid(detail: string): never {
  throw clusterErrors.create("CACHE_CLUSTER_MESSAGE_INVALID", { detail: `cluster bus: ${detail}` });
}

function json(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    invalid("a message body is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    invalid("a message body is not an object");
  return value as Record<string, unknown>;
}

function nodeId(value: unknown, what: string): string {
  if (typeof value !== "string" || !NODE_ID_PATTERN.test(value)) invalid(`${what} is not a node id`);
  return value;
}

function count(value: unknown, what: string, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0 || value > max) {
    invalid(`${what} is not an integer in 0..${max}`);
  }
  return value;
}

function text(value: unknown, what: string, maxChars = 255): string {
  if (typeof value !== "string" || value.length > maxChars) invalid(`${what} is not a short string`);
  return value;
}

function slotText(value: unknown): string {
  const ranges = text(value, "slots", 200_000);
  if (parseRanges(ranges) === undefined) invalid("slots are not slot ranges");
  return ranges;
}

function gossipEntry(value: unknown): GossipEntry {
  if (typeof value !== "object" || value === null) invalid("a gossip entry is not an object");
  const entry = value as Record<string, unknown>;
  const flag = entry.flag;
  if (flag !== "ok" && flag !== "pfail" && flag !== "fail") invalid("a gossip flag is unknown");
  return {
    id: nodeId(entry.id, "gossip id"),
    host: text(entry.host, "gossip host"),
    port: count(entry.port, "gossip port", 65_535),
    busPort: count(entry.busPort, "gossip busPort", 65_535),
    flag,
  };
}

/** Parses and validates a PING/PONG/MEET body. */
export function parseHeader(body: string): NodeHeader {
  const raw = json(body);
  const role = raw.role;
  if (role !== "primary" && role !== "replica") invalid("role is neither primary nor replica");
  const gossip = raw.gossip;
  if (!Array.isArray(gossip) || gossip.length > MAX_GOSSIP_ENTRIES) invalid("gossip is not a bounded list");
  return {
    id: nodeId(raw.id, "id"),
    host: text(raw.host, "host"),
    port: count(raw.port, "port", 65_535),
    busPort: count(raw.busPort, "busPort", 65_535),
    role,
    primaryId:
      raw.primaryId === undefined || raw.primaryId === null ? undefined : nodeId(raw.primaryId, "primaryId"),
    currentEpoch: count(raw.currentEpoch, "currentEpoch"),
    configEpoch: count(raw.configEpoch, "configEpoch"),
    slots: slotText(raw.slots),
    offset: count(raw.offset, "offset"),
    gossip: gossip.map(gossipEntry),
  };
}

/** An UPDATE: a newer owner's id, configEpoch and slots. */
export interface UpdateMessage {
  readonly id: string;
  readonly configEpoch: number;
  readonly slots: string;
}

export function parseUpdate(body: string): UpdateMessage {
  const raw = json(body);
  return {
    id: nodeId(raw.id, "id"),
    configEpoch: count(raw.configEpoch, "configEpoch"),
    slots: slotText(raw.slots),
  };
}

export function parseVoteRequest(body: string): VoteRequestMessage {
  const raw = json(body);
  return {
    requesterId: nodeId(raw.requesterId, "requesterId"),
    epoch: count(raw.epoch, "epoch"),
    claimedConfigEpoch: count(raw.claimedConfigEpoch, "claimedConfigEpoch"),
    slots: slotText(raw.slots),
  };
}

/** The slots of a validated header, as ranges. */
export function headerSlots(header: { readonly slots: string }): SlotRange[] {
  return parseRanges(header.slots) ?? [];
}

/** A node id argument (FAIL messages, votes), validated. */
export function parseNodeId(value: string): string {
  return nodeId(value, "node id");
}

/** An integer argument of a bus frame, validated. */
export function parseCount(value: string | undefined, what: string): number {
  if (value === undefined || !/^\d{1,15}$/.test(value)) invalid(`${what} is not an integer`);
  return Number(value);
}

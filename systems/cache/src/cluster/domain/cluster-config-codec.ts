/**
 * The cluster config a node persists in its data dir (Redis's nodes.conf, as JSON): its
 * own id, currentEpoch and the epoch it last voted in, and every node it knows with role,
 * configEpoch and slots, plus slots mid-migration. A node restarted from it rejoins with
 * the same id and slots, and will not vote twice in one epoch across a crash.
 *
 * @example
 * const text = encodeClusterConfig(state);
 * const again = decodeClusterConfig(text, "/data/nodes.json"); // same id, epochs and slots
 */

import { formatRanges, isSlot, parseRanges, slotsOf, toRanges } from "../../domain/slot-ranges.ts";
import { clusterErrors } from "../../errors.ts";
import { NODE_ID_PATTERN } from "./cluster-gossip.ts";
import { type ClusterNodeRecord, ClusterState } from "./cluster-state.ts";

const FORMAT = 1;

interface PersistedNode {
  id: string;
  host: string;
  port: number;
  busPort: number;
  role: "primary" | "replica";
  primaryId: string | null;
  configEpoch: number;
  slots: string;
}

interface PersistedConfig {
  format: number;
  myId: string;
  currentEpoch: number;
  lastVoteEpoch: number;
  nodes: PersistedNode[];
  migrating: Record<string, string>;
  importing: Record<string, string>;
}

export function encodeClusterConfig(state: ClusterState): string {
  const nodes: PersistedNode[] = [...state.nodes()].map((node) => ({
    id: node.id,
    host: node.host,
    port: node.port,
    busPort: node.busPort,
    role: node.role,
    primaryId: node.primaryId ?? null,
    configEpoch: node.configEpoch,
    slots: formatRanges(toRanges(state.slotsOf(node.id))),
  }));
  const config: PersistedConfig = {
    format: FORMAT,
    myId: state.myId,
    currentEpoch: state.currentEpoch,
    lastVoteEpoch: state.lastVoteEpoch,
    nodes,
    migrating: Object.fromEntries(state.migrating),
    importing: Object.fromEntries(state.importing),
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

function corrupt(file: string, detail: string): never {
  throw clusterErrors.create("CACHE_CLUSTER_CONFIG_CORRUPT", {
    detail: `cluster config ${file}: ${detail}`,
    fields: { file },
  });
}

function checkNode(file: string, node: PersistedNode): void {
  const ok =
    NODE_ID_PATTERN.test(node.id) &&
    typeof node.host === "string" &&
    Number.isInteger(node.port) &&
    Number.isInteger(node.busPort) &&
    (node.role === "primary" || node.role === "replica") &&
    (node.primaryId === null || NODE_ID_PATTERN.test(node.primaryId)) &&
    Number.isSafeInteger(node.configEpoch) &&
    parseRanges(node.slots) !== undefined;
  if (!ok) corrupt(file, `node entry ${JSON.stringify(node).slice(0, 200)} is malformed`);
}

/** Rebuilds the state a node saved; CACHE_CLUSTER_CONFIG_CORRUPT names what is wrong. */
export function decodeClusterConfig(text: string, file: string): ClusterState {
  let config: PersistedConfig;
  try {
    config = JSON.parse(text) as PersistedConfig;
  } catch (error) {
    throw clusterErrors.create("CACHE_CLUSTER_CONFIG_CORRUPT", {
      detail: `cluster config ${file} is not JSON`,
      fields: { file },
      cause: error,
    });
  }
  if (config.format !== FORMAT) corrupt(file, `format ${config.format} is not ${FORMAT}`);
  if (!Array.isArray(config.nodes)) corrupt(file, "nodes is not a list");
  for (const node of config.nodes) checkNode(file, node);
  const me = config.nodes.find((node) => node.id === config.myId);
  if (me === undefined) corrupt(file, "it does not list this node itself");
  const state = new ClusterState({ id: me.id, host: me.host, port: me.port, busPort: me.busPort });
  state.currentEpoch = config.currentEpoch;
  state.lastVoteEpoch = config.lastVoteEpoch;
  for (const node of config.nodes) {
    const record: ClusterNodeRecord = {
      id: node.id,
      host: node.host,
      port: node.port,
      busPort: node.busPort,
      role: node.role,
      primaryId: node.primaryId ?? undefined,
      configEpoch: node.configEpoch,
    };
    state.restoreNode(record);
    for (const slot of slotsOf(parseRanges(node.slots)!)) state.assign(slot, node.id);
  }
  for (const [table, target] of [
    [config.migrating, state.migrating],
    [config.importing, state.importing],
  ] as const) {
    for (const [slot, id] of Object.entries(table ?? {})) {
      if (!isSlot(Number(slot)) || !NODE_ID_PATTERN.test(id))
        corrupt(file, `migration entry ${slot} is malformed`);
      target.set(Number(slot), id);
    }
  }
  return state;
}

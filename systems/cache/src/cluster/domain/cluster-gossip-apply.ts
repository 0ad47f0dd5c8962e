/**
 * What a node learns from one PING / PONG / MEET header (Redis's clusterProcessPacket,
 * the parts that change the view):
 *
 * 1. currentEpoch: adopt the sender's if higher (epochs only move forward).
 * 2. The sender's role: a replica names its primary; a primary's configEpoch can only rise.
 * 3. A primary's slot claims, decided by configEpoch (ClusterState.applySlotClaims):
 *    this is where a deposed primary learns it lost its slots and must follow the winner.
 * 4. Two primaries with the same configEpoch: the smaller id takes a new one.
 * 5. Gossip: unknown nodes are added (and will be pinged); a voting sender's flags
 *    become failure reports (CA-15), and its "ok" withdraws an earlier report.
 *
 * @example
 * const effects = absorbHeader(state, detector, parseHeader(body), nowMs);
 * if (effects.follow) startReplicating(effects.follow);
 */

import { slotsOf } from "../../domain/slot-ranges.ts";
import type { FailureDetector } from "./cluster-failure-detector.ts";
import { headerSlots, type NodeHeader } from "./cluster-gossip.ts";
import type { ClusterState } from "./cluster-state.ts";

export interface HeaderEffects {
  /** Nodes first heard of in this header's gossip. */
  readonly newNodes: readonly string[];
  /** This node must now replicate this primary (it, or its primary, lost the last slot to it). */
  readonly follow: string | undefined;
  /** Slots this node served and lost; their keys belong to the new owner now. */
  readonly lostSlots: readonly number[];
}

/**
 * Owners whose configEpoch beats the sender's claim on some slot it still claims: the
 * sender has a stale view (a primary back after a failover) and is sent an UPDATE about
 * each, as Redis does, so it learns at once instead of on those owners' next ping.
 */
export function staleClaimOwners(state: ClusterState, header: NodeHeader): string[] {
  if (header.role !== "primary") return [];
  const owners = new Set<string>();
  for (const slot of slotsOf(headerSlots(header))) {
    const owner = state.owner(slot);
    if (owner === undefined || owner === header.id || owners.has(owner)) continue;
    if ((state.node(owner)?.configEpoch ?? 0) > header.configEpoch) owners.add(owner);
  }
  return [...owners];
}

export function absorbHeader(
  state: ClusterState,
  detector: FailureDetector,
  header: NodeHeader,
  nowMs: number,
): HeaderEffects {
  state.observeEpoch(header.currentEpoch);
  const sender = state.node(header.id);
  if (sender === undefined || header.id === state.myId)
    return { newNodes: [], follow: undefined, lostSlots: [] };
  state.updateAddress(header);
  let follow: string | undefined;
  let lostSlots: readonly number[] = [];
  if (header.role === "replica" && header.primaryId !== undefined) {
    if (state.node(header.primaryId) !== undefined) state.setReplicaOf(header.id, header.primaryId);
  } else if (header.role === "primary") {
    state.setPrimary(header.id);
    if (header.configEpoch > sender.configEpoch) {
      sender.configEpoch = header.configEpoch;
      state.touch();
    }
    const outcome = state.applySlotClaims(header.id, header.configEpoch, slotsOf(headerSlots(header)));
    follow = outcome.followId;
    lostSlots = outcome.lostSlots;
    state.resolveEpochCollision(header.id);
  }
  const newNodes: string[] = [];
  const senderVotes = state.isVoter(header.id);
  for (const entry of header.gossip) {
    if (entry.id === state.myId) continue;
    if (state.node(entry.id) === undefined) {
      state.addNode(entry);
      detector.track(entry.id, nowMs);
      newNodes.push(entry.id);
    }
    if (senderVotes) detector.report(header.id, entry.id, entry.flag !== "ok", nowMs);
  }
  return { newNodes, follow, lostSlots };
}

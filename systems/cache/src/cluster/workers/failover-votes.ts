/**
 * The election's messages (CA-15): a replica asks every voting primary for its vote in
 * a new epoch (`AUTH-REQUEST`), and a primary that grants it answers `AUTH-ACK <id>
 * <epoch>` on the same link. The grant is persisted (lastVoteEpoch) before the answer
 * leaves, so a primary that crashes and restarts cannot vote twice in one epoch.
 *
 * @example
 * requestVotes(runtime, 8);                  // replica side, from the cron
 * handleVoteRequest(runtime, link, body);    // primary side, from the bus
 */
import type { Clock } from "@casebook/kit/clock";
import { formatRanges, slotsOf, toRanges } from "../../domain/slot-ranges.ts";
import type { BusLink } from "../api/cluster-bus-link.ts";
import type { FailureDetector } from "../domain/cluster-failure-detector.ts";
import { headerSlots, parseVoteRequest } from "../domain/cluster-gossip.ts";
import type { ClusterState } from "../domain/cluster-state.ts";
import { decideVote } from "../domain/failover-election.ts";

/**
 * What the election's messages need of the node (BullMQ's `LockManagerWorkerContext`: the
 * small interface, not the whole runtime). `ClusterRuntime` is one.
 */
export interface VoteContext {
  readonly state: ClusterState;
  readonly clock: Clock;
  readonly settings: { readonly nodeTimeoutMs: number };
  readonly detector: Pick<FailureDetector, "isFailing">;
  /** Failed primary id → when this node last voted for one of its replicas. */
  readonly votedAtMs: Map<string, number>;
  readonly log: {
    info(fields: object, message: string): void;
    warn(fields: object, message: string): void;
  };
  /** Persists the config now (a vote must be on disk before it leaves). */
  saveConfig(): void;
  sendTo(id: string, parts: readonly string[]): void;
}

/** Replica side: enter `epoch` (persisted) and ask every other voter. */
export function requestVotes(runtime: VoteContext, epoch: number): void {
  const state = runtime.state;
  const me = state.myself;
  const primary = me.primaryId === undefined ? undefined : state.node(me.primaryId);
  if (primary === undefined) return;
  state.observeEpoch(epoch);
  runtime.saveConfig();
  const body = JSON.stringify({
    requesterId: me.id,
    epoch,
    claimedConfigEpoch: primary.configEpoch,
    slots: formatRanges(toRanges(state.slotsOf(primary.id))),
  });
  const voters = state.voters().filter((voter) => voter.id !== me.id && voter.id !== primary.id);
  for (const voter of voters) runtime.sendTo(voter.id, ["AUTH-REQUEST", body]);
  runtime.log.warn(
    { epoch, failedPrimaryId: primary.id, voters: voters.length, quorum: state.quorum() },
    "cluster: primary FAIL, asking for votes",
  );
}

/** Primary side: grant or deny; a grant is saved before it is sent. */
export function handleVoteRequest(runtime: VoteContext, link: BusLink, body: string): void {
  const request = parseVoteRequest(body);
  const state = runtime.state;
  state.observeEpoch(request.epoch);
  const nowMs = runtime.clock.monotonicMs();
  const decision = decideVote(
    state,
    {
      requesterId: request.requesterId,
      epoch: request.epoch,
      claimedConfigEpoch: request.claimedConfigEpoch,
      claimedSlots: [...slotsOf(headerSlots(request))],
    },
    {
      nowMs,
      nodeTimeoutMs: runtime.settings.nodeTimeoutMs,
      isFailing: (id) => runtime.detector.isFailing(id),
      votedAtMs: runtime.votedAtMs,
    },
  );
  if (!decision.grant) {
    runtime.log.info(
      { requesterId: request.requesterId, epoch: request.epoch, why: decision.reason },
      "cluster: vote denied",
    );
    return;
  }
  const primaryId = state.node(request.requesterId)!.primaryId!;
  state.lastVoteEpoch = state.currentEpoch;
  state.touch();
  runtime.votedAtMs.set(primaryId, nowMs);
  runtime.saveConfig();
  link.send(["AUTH-ACK", state.myId, String(request.epoch)]);
  runtime.log.info({ requesterId: request.requesterId, epoch: request.epoch }, "cluster: vote granted");
}

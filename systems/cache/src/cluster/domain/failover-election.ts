/**
 * Replica election (CA-15, CA-16), after Redis Cluster's failover:
 *
 * - A replica whose primary is FAIL (a quorum agreed, see cluster-failure-detector.ts)
 *   waits `500 ms + random(0..500 ms) + rank × 1 s` — rank 0 is the replica with the most
 *   replicated data, so it usually asks first and loses the fewest writes — then bumps
 *   currentEpoch and asks every voting primary for its vote in that epoch.
 * - A primary grants at most one vote per epoch (persisted before it answers), only for a
 *   replica whose primary it also sees FAIL, at most once per failed primary every
 *   2 × node timeout, and never to a replica whose view of the slots is older than its own.
 * - A majority of voters elects the replica: it takes the election epoch as its
 *   configEpoch and claims its old primary's slots. That epoch is higher than any the old
 *   primary had, so wherever the two claims meet — the old primary included, when it
 *   comes back — the new one wins.
 * - No majority within the auth timeout (2 × node timeout, at least 2 s): try again later,
 *   in a new epoch.
 *
 * @example
 * const election = new ReplicaElection({ nodeTimeoutMs: 1_000, random });
 * election.tick(now, { primaryFailed: true, rank: 0, currentEpoch: 6 });  // { kind: "wait" }
 * election.tick(later, { … });            // { kind: "request", epoch: 7 } → send AUTH-REQUEST
 * election.vote("b", 7, 2);               // false: 1 of 2
 * election.vote("c", 7, 2);               // true: elected in epoch 7
 */
import type { RandomSource } from "@casebook/kit/random";
import type { ClusterState } from "./cluster-state.ts";

/** Redis's fixed and random parts of the election delay, and the delay per rank. */
export const ELECTION_DELAY_FIXED_MS = 500;
export const ELECTION_DELAY_RANDOM_MS = 500;
export const ELECTION_DELAY_PER_RANK_MS = 1_000;
/** Redis's floor on the auth timeout. */
export const MIN_AUTH_TIMEOUT_MS = 2_000;

export interface ElectionInput {
  readonly primaryFailed: boolean;
  /** Replicas of the same primary with a larger replication offset. */
  readonly rank: number;
  readonly currentEpoch: number;
}

export type ElectionStep =
  | { readonly kind: "idle" }
  | { readonly kind: "wait" }
  | { readonly kind: "request"; readonly epoch: number };

export interface ReplicaElectionOptions {
  readonly nodeTimeoutMs: number;
  readonly random: RandomSource;
}

export class ReplicaElection {
  readonly #nodeTimeoutMs: number;
  readonly #random: RandomSource;
  #phase: "idle" | "waiting" | "voting" = "idle";
  #startAtMs = 0;
  #deadlineMs = 0;
  #epoch = 0;
  readonly #votes = new Set<string>();

  constructor(options: ReplicaElectionOptions) {
    this.#nodeTimeoutMs = options.nodeTimeoutMs;
    this.#random = options.random;
  }

  get authTimeoutMs(): number {
    return Math.max(this.#nodeTimeoutMs * 2, MIN_AUTH_TIMEOUT_MS);
  }

  /** The epoch of the running vote, 0 when none runs. */
  get epoch(): number {
    return this.#phase === "voting" ? this.#epoch : 0;
  }

  reset(): void {
    this.#phase = "idle";
    this.#votes.clear();
  }

  /** Advances the election; a "request" step means: set currentEpoch to `epoch` and ask the voters. */
  tick(nowMs: number, input: ElectionInput): ElectionStep {
    if (!input.primaryFailed) {
      this.reset();
      return { kind: "idle" };
    }
    if (this.#phase === "idle") {
      this.#phase = "waiting";
      this.#startAtMs = nowMs + this.#delayMs(input.rank);
    }
    if (this.#phase === "voting" && nowMs > this.#deadlineMs) {
      // No majority in time (a split vote, voters unreachable): retry in a later, new epoch.
      this.#phase = "waiting";
      this.#startAtMs = nowMs + this.authTimeoutMs;
    }
    if (this.#phase === "waiting" && nowMs >= this.#startAtMs) {
      this.#phase = "voting";
      this.#epoch = input.currentEpoch + 1;
      this.#deadlineMs = nowMs + this.authTimeoutMs;
      this.#votes.clear();
      return { kind: "request", epoch: this.#epoch };
    }
    return { kind: "wait" };
  }

  /** Counts a vote for the running epoch; true once `quorum` voters granted it. */
  vote(voterId: string, epoch: number, quorum: number): boolean {
    if (this.#phase !== "voting" || epoch !== this.#epoch) return false;
    this.#votes.add(voterId);
    return this.#votes.size >= quorum;
  }

  #delayMs(rank: number): number {
    return (
      ELECTION_DELAY_FIXED_MS +
      Math.floor(this.#random.next() * ELECTION_DELAY_RANDOM_MS) +
      rank * ELECTION_DELAY_PER_RANK_MS
    );
  }
}

export interface VoteRequest {
  readonly requesterId: string;
  /** The election epoch (the requester's currentEpoch). */
  readonly epoch: number;
  /** The configEpoch of the requester's primary, as the requester knows it. */
  readonly claimedConfigEpoch: number;
  /** The slots the requester will claim (its primary's, as it knows them). */
  readonly claimedSlots: readonly number[];
}

export type VoteDecision = { readonly grant: true } | { readonly grant: false; readonly reason: string };

export interface VoteContext {
  readonly nowMs: number;
  readonly nodeTimeoutMs: number;
  isFailing(id: string): boolean;
  /** Failed primary id → when this node last voted for one of its replicas. */
  readonly votedAtMs: ReadonlyMap<string, number>;
}

/** Whether this primary grants its vote (Redis's clusterSendFailoverAuthIfNeeded). The caller first adopts the epoch. */
export function decideVote(state: ClusterState, request: VoteRequest, context: VoteContext): VoteDecision {
  if (!state.isVoter(state.myId))
    return { grant: false, reason: "this node serves no slot: it does not vote" };
  if (request.epoch < state.currentEpoch) return { grant: false, reason: "request from an old epoch" };
  if (state.lastVoteEpoch >= state.currentEpoch)
    return { grant: false, reason: "already voted in this epoch" };
  const requester = state.node(request.requesterId);
  if (requester === undefined || requester.role !== "replica" || requester.primaryId === undefined) {
    return { grant: false, reason: "the requester is not a known replica" };
  }
  const primaryId = requester.primaryId;
  if (!context.isFailing(primaryId)) return { grant: false, reason: "its primary is not FAIL here" };
  const votedAtMs = context.votedAtMs.get(primaryId);
  if (votedAtMs !== undefined && context.nowMs - votedAtMs < context.nodeTimeoutMs * 2) {
    return { grant: false, reason: "voted for a replica of this primary too recently" };
  }
  for (const slot of request.claimedSlots) {
    const owner = state.owner(slot);
    const ownerEpoch = owner === undefined ? 0 : (state.node(owner)?.configEpoch ?? 0);
    if (ownerEpoch > request.claimedConfigEpoch) {
      return { grant: false, reason: `its view of slot ${slot} is older than ours` };
    }
  }
  return { grant: true };
}

/**
 * The elected replica takes over: primary role, the election epoch as configEpoch, and
 * every slot its old primary served. Returns the old primary's id.
 */
export function takeOverPrimary(state: ClusterState, electionEpoch: number): string | undefined {
  const me = state.myself;
  const oldPrimaryId = me.primaryId;
  state.setPrimary(state.myId);
  if (me.configEpoch < electionEpoch) {
    me.configEpoch = electionEpoch;
    state.touch();
  }
  if (oldPrimaryId !== undefined)
    for (const slot of state.slotsOf(oldPrimaryId)) state.assign(slot, state.myId);
  return oldPrimaryId;
}

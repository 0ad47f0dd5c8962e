/**
 * Elections and epochs, deterministically (src/cluster/domain/failover-election.ts, cluster-state.ts,
 * cluster-gossip-apply.ts): the election's delay and ranking, a primary's vote rules,
 * the takeover, and how configEpochs settle two claims on one slot — the mechanism that
 * makes a deposed primary give up its slots and follow its replacement (CA-16).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { decodeClusterConfig, encodeClusterConfig } from "../src/cluster/domain/cluster-config-codec.ts";
import { FailureDetector } from "../src/cluster/domain/cluster-failure-detector.ts";
import type { NodeHeader } from "../src/cluster/domain/cluster-gossip.ts";
import { absorbHeader, staleClaimOwners } from "../src/cluster/domain/cluster-gossip-apply.ts";
import { ClusterState } from "../src/cluster/domain/cluster-state.ts";
import {
  decideVote,
  ELECTION_DELAY_FIXED_MS,
  ELECTION_DELAY_PER_RANK_MS,
  ReplicaElection,
  takeOverPrimary,
  type VoteContext,
} from "../src/cluster/domain/failover-election.ts";

const [A, B, C, RA] = ["a", "b", "c", "d"].map((ch) => ch.repeat(40)) as [string, string, string, string];
const address = (id: string) => ({ id, host: "127.0.0.1", port: 7000, busPort: 17000 });

/** A's slots 0–9, B's 10–19, C's 20–29, RA replicates A; seen from `me`. */
function cluster(me: string): ClusterState {
  const state = new ClusterState(address(me));
  for (const id of [A, B, C, RA]) state.addNode(address(id));
  state.setReplicaOf(RA, A);
  for (let slot = 0; slot < 30; slot++) state.assign(slot, [A, B, C][Math.floor(slot / 10)]);
  state.node(A)!.configEpoch = 1;
  state.node(B)!.configEpoch = 2;
  state.node(C)!.configEpoch = 3;
  state.currentEpoch = 3;
  return state;
}

function voteContext(failing: readonly string[], nowMs = 10_000): VoteContext {
  return { nowMs, nodeTimeoutMs: 1_000, isFailing: (id) => failing.includes(id), votedAtMs: new Map() };
}

const request = { requesterId: RA, epoch: 4, claimedConfigEpoch: 1, claimedSlots: [0, 1, 2] };

describe("replica election", () => {
  test("waits 500 ms + random(500) + rank × 1 s, then asks in a new epoch; retries after the auth timeout", () => {
    const election = new ReplicaElection({ nodeTimeoutMs: 1_000, random: seededRandom(7) });
    const input = { primaryFailed: true, rank: 1, currentEpoch: 6 };
    assert.equal(election.tick(0, input).kind, "wait");
    const earliest = ELECTION_DELAY_FIXED_MS + ELECTION_DELAY_PER_RANK_MS;
    assert.equal(
      election.tick(earliest - 1, input).kind,
      "wait",
      "a lower-ranked replica waits a second longer",
    );
    let step = election.tick(earliest + 500, input);
    assert.deepEqual(step, { kind: "request", epoch: 7 });
    assert.equal(election.vote(B, 7, 2), false);
    assert.equal(election.vote(B, 7, 2), false, "one voter counts once");
    assert.equal(election.vote(C, 6, 2), false, "a vote for another epoch does not count");
    step = election.tick(earliest + 500 + election.authTimeoutMs + 1, { ...input, currentEpoch: 7 });
    assert.equal(step.kind, "wait", "no majority in time: wait, then retry");
    step = election.tick(earliest + 500 + election.authTimeoutMs * 2 + 2, { ...input, currentEpoch: 7 });
    assert.deepEqual(step, { kind: "request", epoch: 8 });
    assert.equal(election.vote(B, 8, 2), false);
    assert.equal(election.vote(C, 8, 2), true, "elected by a majority of voters");
    assert.equal(election.tick(1e9, { ...input, primaryFailed: false }).kind, "idle");
  });
});

describe("a primary's vote", () => {
  test("CA-15 granted only for a replica whose primary this voter also sees FAIL", () => {
    assert.deepEqual(decideVote(cluster(B), request, voteContext([])), {
      grant: false,
      reason: "its primary is not FAIL here",
    });
    assert.deepEqual(decideVote(cluster(B), request, voteContext([A])), { grant: true });
  });

  test("one vote per epoch, and none for a replica of the same primary within 2 × node timeout", () => {
    const state = cluster(B);
    state.currentEpoch = 4;
    state.lastVoteEpoch = 4;
    assert.equal(decideVote(state, request, voteContext([A])).grant, false);
    const fresh = cluster(B);
    fresh.currentEpoch = 5;
    const recently = voteContext([A], 10_000);
    (recently.votedAtMs as Map<string, number>).set(A, 9_000);
    assert.equal(decideVote(fresh, { ...request, epoch: 5 }, recently).grant, false);
  });

  test("CA-16 no vote for a replica whose view of the slots is older than the voter's", () => {
    const state = cluster(B);
    state.node(A)!.configEpoch = 9;
    const decision = decideVote(state, request, voteContext([A]));
    assert.deepEqual(decision, { grant: false, reason: "its view of slot 0 is older than ours" });
  });

  test("replicas and slotless primaries do not vote", () => {
    assert.equal(decideVote(cluster(RA), request, voteContext([A])).grant, false);
  });
});

describe("epochs and slot claims", () => {
  test("the winner takes its old primary's slots with the election epoch", () => {
    const state = cluster(RA);
    assert.equal(takeOverPrimary(state, 4), A);
    assert.equal(state.myself.role, "primary");
    assert.equal(state.myself.configEpoch, 4);
    assert.deepEqual(state.slotsOf(RA), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(state.slotCount(A), 0);
  });

  test("CA-16 a deposed primary hearing the newer claim loses every slot and follows the winner", () => {
    const oldPrimary = cluster(A);
    const detector = new FailureDetector({ nodeTimeoutMs: 1_000 });
    const header: NodeHeader = {
      ...address(RA),
      role: "primary",
      primaryId: undefined,
      currentEpoch: 4,
      configEpoch: 4,
      slots: "0-9",
      offset: 0,
      gossip: [],
    };
    const effects = absorbHeader(oldPrimary, detector, header, 0);
    assert.equal(effects.follow, RA, "A must now replicate RA");
    assert.deepEqual(effects.lostSlots, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.equal(oldPrimary.currentEpoch, 4);
    const stale: NodeHeader = { ...header, id: B, configEpoch: 1, slots: "0-9" };
    assert.equal(
      absorbHeader(cluster(C), detector, stale, 0).lostSlots.length,
      0,
      "an older claim changes nothing",
    );
    const c = cluster(C);
    absorbHeader(c, detector, stale, 0);
    assert.equal(c.owner(0), A);
  });

  test("CA-16 a primary still claiming slots with an old epoch is sent an UPDATE naming the newer owner", () => {
    const view = cluster(B);
    takeOverPrimary(view, 4);
    const replacedA = cluster(RA);
    takeOverPrimary(replacedA, 4);
    const stale: NodeHeader = {
      ...address(A),
      role: "primary",
      primaryId: undefined,
      currentEpoch: 3,
      configEpoch: 1,
      slots: "0-9",
      offset: 0,
      gossip: [],
    };
    assert.deepEqual(staleClaimOwners(replacedA, stale), [RA]);
    assert.deepEqual(staleClaimOwners(cluster(C), stale), [], "a current claim needs no UPDATE");
  });

  test("a resharded slot: the target's epoch bump makes its claim win everywhere", () => {
    const target = cluster(B);
    target.importing.set(5, A);
    target.assign(5, B);
    target.importing.delete(5);
    assert.equal(target.bumpConfigEpochWithoutConsensus(), true);
    assert.equal(target.myself.configEpoch, 4);
    const other = cluster(C);
    other.node(B)!.configEpoch = 4;
    other.applySlotClaims(B, 4, [5, 10]);
    assert.equal(other.owner(5), B);
    assert.equal(other.owner(0), A, "A keeps its other slots");
  });

  test("two primaries with one config epoch: the smaller id takes a new one", () => {
    const a = cluster(A);
    a.node(B)!.configEpoch = 1;
    assert.equal(a.resolveEpochCollision(B), true);
    assert.equal(a.myself.configEpoch, 4);
    const b = cluster(B);
    b.node(A)!.configEpoch = 2;
    assert.equal(b.resolveEpochCollision(A), false, "the larger id keeps its epoch");
  });

  test("the persisted config round-trips ids, epochs, roles, slots and migrations", () => {
    const state = cluster(B);
    state.lastVoteEpoch = 3;
    state.migrating.set(12, C);
    const again = decodeClusterConfig(encodeClusterConfig(state), "nodes.json");
    assert.equal(again.myId, B);
    assert.equal(again.currentEpoch, 3);
    assert.equal(again.lastVoteEpoch, 3);
    assert.equal(again.node(RA)!.primaryId, A);
    assert.deepEqual(again.slotsOf(C), state.slotsOf(C));
    assert.equal(again.migrating.get(12), C);
    assert.throws(() => decodeClusterConfig("{", "nodes.json"), /not JSON/);
    assert.throws(
      () => decodeClusterConfig('{"format":1,"myId":"x","nodes":[]}', "nodes.json"),
      /does not list/,
    );
  });
});

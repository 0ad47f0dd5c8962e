/**
 * PFAIL → FAIL by majority (src/cluster/domain/cluster-failure-detector.ts), with a manual clock:
 * one observer alone never reaches FAIL (CA-15), a quorum of voter reports does, reports
 * expire, FAIL clears by Redis's rules, and a node that was itself frozen does not blame
 * its peers.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Electorate, FailureDetector } from "../src/cluster/domain/cluster-failure-detector.ts";

const TIMEOUT_MS = 1_000;
const VOTERS = new Set(["me", "b", "c"]);

function electorate(overrides: Partial<Electorate> = {}): Electorate {
  return {
    isVoter: (id) => VOTERS.has(id),
    quorum: () => 2,
    selfVotes: true,
    servesSlots: () => true,
    ...overrides,
  };
}

/** A detector watching b and c from t=0; c keeps answering, b goes silent after t=0. */
function watching(): FailureDetector {
  const detector = new FailureDetector({ nodeTimeoutMs: TIMEOUT_MS });
  detector.track("b", 0);
  detector.track("c", 0);
  return detector;
}

function keepAlive(detector: FailureDetector, id: string, nowMs: number): void {
  detector.pongReceived(id, nowMs);
  detector.pingReceived(id, nowMs);
}

describe("failure detection", () => {
  test("CA-15 an isolated observer sees PFAIL but never reaches FAIL alone", () => {
    const detector = watching();
    const lonely = electorate({ quorum: () => 2 });
    detector.pingSent("b", 100);
    for (let nowMs = 100; nowMs <= 10_000; nowMs += 100) {
      keepAlive(detector, "c", nowMs);
      const { failed } = detector.evaluate(nowMs, lonely);
      assert.deepEqual(failed, [], `no FAIL at ${nowMs} ms`);
    }
    assert.equal(detector.health("b")!.pfail, true);
    assert.equal(detector.isFailing("b"), false);
    // A replica does not vote: even its own PFAIL counts for nothing.
    const replicaView = watching();
    replicaView.pingSent("b", 0);
    assert.deepEqual(replicaView.evaluate(5_000, electorate({ selfVotes: false })).failed, []);
  });

  test("CA-15 FAIL once a quorum of voting primaries reports it; a replica's report does not count", () => {
    const detector = watching();
    detector.track("replica-of-b", 0);
    detector.pingSent("b", 0);
    keepAlive(detector, "c", 1_500);
    detector.report("replica-of-b", "b", true, 1_500);
    assert.deepEqual(
      detector.evaluate(1_500, electorate()).failed,
      [],
      "PFAIL here + a non-voter's report: 1 of 2",
    );
    detector.report("c", "b", true, 1_600);
    assert.deepEqual(detector.evaluate(1_600, electorate()).failed, ["b"], "PFAIL here + c's report: 2 of 2");
    assert.equal(detector.isFailing("b"), true);
  });

  test("failure reports expire after 2 × node timeout", () => {
    const detector = watching();
    detector.report("c", "b", true, 0);
    detector.pingSent("b", 1_000);
    keepAlive(detector, "c", 2_100);
    assert.deepEqual(
      detector.evaluate(2_100, electorate()).failed,
      [],
      "c's report from t=0 is stale at 2.1 s",
    );
    assert.equal(
      detector.reportCount("b", 2_100, () => true),
      0,
    );
  });

  test("FAIL clears when a slotless node answers again, or after 2 × timeout for one nobody replaced", () => {
    const detector = watching();
    detector.markFailed("b", 1_000);
    keepAlive(detector, "b", 1_100);
    assert.deepEqual(
      detector.evaluate(1_100, electorate()).cleared,
      [],
      "still serves slots: wait for a failover",
    );
    assert.deepEqual(detector.evaluate(3_100, electorate()).cleared, [], "not yet 2 × timeout");
    keepAlive(detector, "b", 3_100);
    keepAlive(detector, "c", 3_100);
    assert.deepEqual(detector.evaluate(3_100, electorate()).cleared, ["b"]);
    detector.markFailed("c", 4_000);
    keepAlive(detector, "c", 4_100);
    assert.deepEqual(detector.evaluate(4_100, electorate({ servesSlots: () => false })).cleared, ["c"]);
  });

  test("a node that was frozen does not blame its peers for its own silence", () => {
    const detector = watching();
    detector.pingSent("b", 0);
    detector.pingSent("c", 0);
    detector.graceUntil(5_000 + TIMEOUT_MS);
    assert.equal(detector.evaluate(5_000, electorate()).failed.length, 0);
    assert.equal(detector.health("b")!.pfail, false, "no PFAIL verdict while the node catches up");
    keepAlive(detector, "c", 6_200);
    detector.pingSent("b", 5_200);
    detector.evaluate(6_300, electorate());
    assert.equal(detector.health("b")!.pfail, true, "after the grace a silent peer is PFAIL again");
    assert.equal(detector.health("c")!.pfail, false);
  });

  test("a link that carries only my pings is not a working link: the peer's own pings must arrive too", () => {
    const detector = watching();
    for (let nowMs = 100; nowMs <= 2_000; nowMs += 100) {
      detector.pingSent("b", nowMs);
      detector.pongReceived("b", nowMs);
    }
    detector.evaluate(2_000, electorate());
    assert.equal(detector.health("b")!.pfail, true);
    assert.equal(
      detector.contactMs("b"),
      Number.NEGATIVE_INFINITY,
      "two-way contact is the older of the two directions: never",
    );
  });
});

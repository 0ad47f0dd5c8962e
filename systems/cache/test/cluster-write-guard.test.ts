/**
 * CA-16's two deadlines as pure arithmetic (src/cluster/domain/cluster-write-guard.ts): the
 * majority lease a node serves under, and the good-replicas bound a primary takes writes
 * under. The node processes prove the behaviour end to end (failover-split-brain,
 * failover-majority); these pin the edges the processes pass through quickly.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { goodReplicasUntilMs, majorityLeaseUntilMs } from "../src/cluster/domain/cluster-write-guard.ts";

test("CA-16 a node serves until the node timeout after its last contact with the majority it needs", () => {
  // Three voting primaries, quorum 2, this node votes: one other voter is enough, the latest counts.
  assert.equal(majorityLeaseUntilMs([1_000, 900], { quorum: 2, selfVotes: true, nodeTimeoutMs: 500 }), 1_500);
  // Five voters, quorum 3: the second most recent contact bounds the lease.
  assert.equal(
    majorityLeaseUntilMs([1_000, 900, 100, 50], { quorum: 3, selfVotes: true, nodeTimeoutMs: 500 }),
    1_400,
  );
  // A replica (no vote of its own) needs the whole quorum from others.
  assert.equal(
    majorityLeaseUntilMs([1_000, 900], { quorum: 2, selfVotes: false, nodeTimeoutMs: 500 }),
    1_400,
  );
});

test("CA-16 a node on the minority side never serves: fewer contacts than the quorum needs", () => {
  const until = majorityLeaseUntilMs([1_000], { quorum: 3, selfVotes: true, nodeTimeoutMs: 500 });
  assert.equal(until, Number.NEGATIVE_INFINITY);
  assert.equal(
    majorityLeaseUntilMs([], { quorum: 2, selfVotes: true, nodeTimeoutMs: 500 }),
    Number.NEGATIVE_INFINITY,
  );
  // A lone voter is its own majority.
  assert.equal(
    majorityLeaseUntilMs([], { quorum: 1, selfVotes: true, nodeTimeoutMs: 500 }),
    Number.POSITIVE_INFINITY,
  );
});

test("CA-16 min-replicas-to-write: writes only while enough replicas acknowledged within the max lag", () => {
  assert.equal(goodReplicasUntilMs([1_000], { minReplicas: 1, maxLagMs: 400 }), 1_400);
  assert.equal(goodReplicasUntilMs([1_000, 700], { minReplicas: 2, maxLagMs: 400 }), 1_100);
  assert.equal(goodReplicasUntilMs([1_000], { minReplicas: 2, maxLagMs: 400 }), Number.NEGATIVE_INFINITY);
  assert.equal(goodReplicasUntilMs([], { minReplicas: 1, maxLagMs: 400 }), Number.NEGATIVE_INFINITY);
  // min-replicas 0 (the default): no bound.
  assert.equal(goodReplicasUntilMs([], { minReplicas: 0, maxLagMs: 400 }), Number.POSITIVE_INFINITY);
});

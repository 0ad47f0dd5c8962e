/**
 * When a node must refuse to serve (CA-16, split brain). Two deadlines, each an O(1)
 * comparison on every command once computed from the last contacts:
 *
 * - Majority lease: a node keeps serving only while it has had two-way contact with a
 *   majority of the voting primaries (itself included when it votes) within the node
 *   timeout. On the minority side of a partition the lease runs out after the timeout and
 *   the node answers -CLUSTERDOWN, while the majority side is electing a replacement — so
 *   the old primary stops taking writes it would lose. Checked per command, with the time
 *   of the command: a node that was frozen (SIGSTOP, a long GC) must not serve the
 *   requests queued meanwhile on a view that expired while it slept.
 * - Good replicas (Redis's min-replicas-to-write / min-replicas-max-lag): a primary takes
 *   writes only while at least `minReplicas` replicas acknowledged the stream within
 *   `maxLagMs`, else -NOREPLICAS. This bounds the writes a failover can lose (CA-14) to
 *   about `maxLagMs` of them.
 *
 * @example
 * majorityLeaseUntilMs([1_000, 900], { quorum: 2, selfVotes: true, nodeTimeoutMs: 500 }); // 1_500
 * goodReplicasUntilMs([1_000], { minReplicas: 1, maxLagMs: 1_000 });                      // 2_000
 */

export interface LeaseParams {
  readonly quorum: number;
  readonly selfVotes: boolean;
  readonly nodeTimeoutMs: number;
}

/** Until when this node may serve, given the last two-way contact with every other voter. */
export function majorityLeaseUntilMs(otherVoterContactsMs: readonly number[], params: LeaseParams): number {
  const needed = params.quorum - (params.selfVotes ? 1 : 0);
  return kthLatest(otherVoterContactsMs, needed) + params.nodeTimeoutMs;
}

export interface ReplicaParams {
  readonly minReplicas: number;
  readonly maxLagMs: number;
}

/** Until when this primary may take writes, given its replicas' last acknowledgements. */
export function goodReplicasUntilMs(replicaAcksMs: readonly number[], params: ReplicaParams): number {
  return kthLatest(replicaAcksMs, params.minReplicas) + params.maxLagMs;
}

/** The k-th most recent time (k <= 0: always; fewer than k: never). */
function kthLatest(timesMs: readonly number[], k: number): number {
  if (k <= 0) return Number.POSITIVE_INFINITY;
  if (timesMs.length < k) return Number.NEGATIVE_INFINITY;
  return [...timesMs].sort((a, b) => b - a)[k - 1]!;
}

/**
 * Failure detection by majority (CA-15), after Redis Cluster's PFAIL → FAIL.
 *
 * - PFAIL ("possibly failing") is one node's opinion: a ping waited longer than
 *   `nodeTimeoutMs` for its pong, or the peer's own pings stopped arriving for as long.
 *   Both directions count: a link that carries my pings but not the peer's is not a
 *   working link, and treating it as one would let a half-partitioned primary believe
 *   it still sees the majority (see cluster-write-guard.ts).
 * - Nodes gossip their opinions. Each PFAIL/FAIL flag a voting primary reports about a
 *   node is a failure report, valid for 2 × node timeout.
 * - FAIL needs a quorum: a majority of the voting primaries (this node included when it
 *   votes) must report the node within that window. One isolated observer — a replica cut
 *   from its primary, a primary on the wrong side of a partition — sees PFAIL everywhere
 *   but can never reach FAIL alone, so it can never start a failover alone.
 * - FAIL clears when the node answers again and serves no slot (a replica, or a primary
 *   replaced by its replica), or after 2 × node timeout if it still serves slots: nobody
 *   replaced it, so the cluster had better use it again.
 * - A node that was itself frozen (SIGSTOP, a long pause) heard nothing meanwhile: that is
 *   its silence, not its peers'. After such a stall `graceUntil` suspends new PFAIL
 *   verdicts until fresh pings had time to arrive. (The serving lease, which protects
 *   against split brain, deliberately gets no such grace: see cluster-write-guard.ts.)
 *
 * Pure: callers pass the time and who votes.
 *
 * @example
 * const detector = new FailureDetector({ nodeTimeoutMs: 1_000 });
 * detector.track("b", 0);
 * detector.pingSent("b", 0);
 * detector.evaluate(1_500, voters);           // b is PFAIL here, FAIL only with reports from a quorum
 * detector.report("c", "b", true, 1_500);      // c agrees
 * detector.evaluate(1_600, voters).failed;     // ["b"] when quorum is 2 and this node votes
 */

export interface PeerHealth {
  /** When this node started watching the peer: silence is measured from here at most. */
  readonly trackedAtMs: number;
  /** When the oldest unanswered ping left; 0 when none waits for its pong. */
  pingSentMs: number;
  /** When the last ping left (answered or not): the pace of pings. */
  lastPingSentMs: number;
  /**
   * Last pong received (-Infinity: never): my link to the peer works. Not 0 for "never": the
   * monotonic clock starts near 0 with the process, so a 0 would read as a contact at start
   * and lend a restarted node a serving lease it never earned (CA-16).
   */
  pongMs: number;
  /** Last ping received from the peer (-Infinity: never): its link to me works. */
  pingInMs: number;
  pfail: boolean;
  fail: boolean;
  failSinceMs: number;
  /** Reporter id → when it last flagged this peer PFAIL or FAIL. */
  readonly reports: Map<string, number>;
}

/** Who votes and how many votes FAIL needs (from ClusterState). */
export interface Electorate {
  isVoter(id: string): boolean;
  quorum(): number;
  /** This node is a voter itself: its own PFAIL counts as one report. */
  readonly selfVotes: boolean;
  /** The peer serves slots: a FAILed one is cleared only if nobody replaced it in time. */
  servesSlots(id: string): boolean;
}

export interface Evaluation {
  /** Peers that reached FAIL in this evaluation (the caller broadcasts FAIL for them). */
  readonly failed: string[];
  /** Peers whose FAIL was cleared. */
  readonly cleared: string[];
}

export interface FailureDetectorOptions {
  readonly nodeTimeoutMs: number;
}

/** Redis's CLUSTER_FAIL_REPORT_VALIDITY_MULT and CLUSTER_FAIL_UNDO_TIME_MULT. */
const REPORT_VALIDITY_MULT = 2;
const FAIL_UNDO_MULT = 2;

export class FailureDetector {
  readonly nodeTimeoutMs: number;
  readonly #peers = new Map<string, PeerHealth>();
  #graceUntilMs = Number.NEGATIVE_INFINITY;

  constructor(options: FailureDetectorOptions) {
    if (!(options.nodeTimeoutMs > 0)) throw new RangeError("nodeTimeoutMs must be > 0");
    this.nodeTimeoutMs = options.nodeTimeoutMs;
  }

  /**
   * Starts watching `id`. A new peer gets a full node timeout before it can be PFAIL, but
   * no contact is assumed: a node just (re)started has proven nothing yet, so its serving
   * lease waits for real pings and pongs (a restarted old primary must not take writes
   * before the cluster has had a chance to tell it about a failover).
   */
  track(id: string, nowMs: number): PeerHealth {
    let health = this.#peers.get(id);
    if (health === undefined) {
      health = {
        trackedAtMs: nowMs,
        pingSentMs: 0,
        lastPingSentMs: 0,
        pongMs: Number.NEGATIVE_INFINITY,
        pingInMs: Number.NEGATIVE_INFINITY,
        pfail: false,
        fail: false,
        failSinceMs: 0,
        reports: new Map(),
      };
      this.#peers.set(id, health);
    }
    return health;
  }

  health(id: string): PeerHealth | undefined {
    return this.#peers.get(id);
  }

  peers(): IterableIterator<[string, PeerHealth]> {
    return this.#peers.entries();
  }

  isFailing(id: string): boolean {
    return this.#peers.get(id)?.fail === true;
  }

  pingSent(id: string, nowMs: number): void {
    const health = this.track(id, nowMs);
    // The oldest unanswered ping is the one that times out: later ones do not restart the clock.
    if (health.pingSentMs === 0) health.pingSentMs = nowMs;
    health.lastPingSentMs = nowMs;
  }

  pongReceived(id: string, nowMs: number): void {
    const health = this.track(id, nowMs);
    health.pingSentMs = 0;
    health.pongMs = nowMs;
  }

  pingReceived(id: string, nowMs: number): void {
    this.track(id, nowMs).pingInMs = nowMs;
  }

  /** The last time both directions were proven (the older of the last pong and the last ping in; -Infinity: never). */
  contactMs(id: string): number {
    const health = this.#peers.get(id);
    return health === undefined ? Number.NEGATIVE_INFINITY : Math.min(health.pongMs, health.pingInMs);
  }

  /** A voter's gossip flagged (or stopped flagging) `subject`. */
  report(reporterId: string, subjectId: string, failing: boolean, nowMs: number): void {
    const health = this.#peers.get(subjectId);
    if (health === undefined) return;
    if (failing) health.reports.set(reporterId, nowMs);
    else health.reports.delete(reporterId);
  }

  /** A FAIL message from a peer that reached the quorum: adopt its verdict. */
  markFailed(id: string, nowMs: number): boolean {
    const health = this.#peers.get(id);
    if (health === undefined || health.fail) return false;
    health.fail = true;
    health.failSinceMs = nowMs;
    return true;
  }

  /** Valid reports about `id` from current voters. */
  reportCount(id: string, nowMs: number, isVoter: (id: string) => boolean): number {
    const health = this.#peers.get(id);
    if (health === undefined) return 0;
    const validityMs = this.nodeTimeoutMs * REPORT_VALIDITY_MULT;
    let count = 0;
    for (const [reporter, atMs] of health.reports) {
      if (nowMs - atMs > validityMs) health.reports.delete(reporter);
      else if (isVoter(reporter)) count += 1;
    }
    return count;
  }

  /** This node was frozen: no new PFAIL until `untilMs` (its peers need a chance to be heard). */
  graceUntil(untilMs: number): void {
    this.#graceUntilMs = Math.max(this.#graceUntilMs, untilMs);
    for (const health of this.#peers.values()) if (health.pingSentMs > 0) health.pingSentMs = 0;
  }

  /** Re-evaluates every peer: PFAIL from the timeouts, FAIL where a quorum agrees, FAIL cleared. */
  evaluate(nowMs: number, electorate: Electorate): Evaluation {
    const failed: string[] = [];
    const cleared: string[] = [];
    const inGrace = nowMs < this.#graceUntilMs;
    for (const [id, health] of this.#peers) {
      const waited = health.pingSentMs > 0 && nowMs - health.pingSentMs > this.nodeTimeoutMs;
      const silent = nowMs - Math.max(health.pingInMs, health.trackedAtMs) > this.nodeTimeoutMs;
      // In grace a peer can recover from PFAIL but not enter it.
      health.pfail = inGrace ? health.pfail && (waited || silent) : waited || silent;
      if (health.pfail && !health.fail) {
        const votes = this.reportCount(id, nowMs, (voter) => electorate.isVoter(voter));
        if (votes + (electorate.selfVotes ? 1 : 0) >= electorate.quorum()) {
          health.fail = true;
          health.failSinceMs = nowMs;
          failed.push(id);
        }
      } else if (!health.pfail && health.fail && this.#mayClear(id, health, nowMs, electorate)) {
        health.fail = false;
        health.reports.clear();
        cleared.push(id);
      }
    }
    return { failed, cleared };
  }

  #mayClear(id: string, health: PeerHealth, nowMs: number, electorate: Electorate): boolean {
    if (!electorate.servesSlots(id)) return true;
    return nowMs - health.failSinceMs > this.nodeTimeoutMs * FAIL_UNDO_MULT;
  }
}

/**
 * One node's cluster machinery, the I/O around the pure rules of `domain/`:
 *
 * - the bus: every known node pinged every `pingIntervalMs` on its link (cluster-peers.ts
 *   keeps the links), and what each frame means (PING/MEET/PONG carry the header and its
 *   gossip, FAIL, UPDATE, votes, PSYNC, RESTORE);
 * - failure detection (PFAIL → FAIL by quorum, CA-15), the replica election and the
 *   takeover (failover-election.ts), epochs and slot claims (cluster-state.ts);
 * - replication: a ReplicationSource while primary, a ReplicationSink while replica;
 * - the persisted config (saved before any vote leaves, and whenever the view changed);
 * - the serving guards of CA-16: a majority lease and min-replicas-to-write.
 *
 * All cluster timing uses the monotonic clock: a wall-clock jump must not fail a node.
 *
 * @example
 * const runtime = new ClusterRuntime({ keyspace, clock, random, settings, log });
 * await runtime.start({ port: 7000, dir }); // loads dir/nodes.json or becomes a new member
 * runtime.meet("127.0.0.1", 7001, 17001); // joins another node's cluster
 * await runtime.close();
 */
import { randomBytes } from "node:crypto";
import { BackgroundLoop, unrefSleep } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import type { Keyspace } from "../../domain/keyspace.ts";
import type { SlotIndex } from "../../domain/slot-index.ts";
import { formatRanges, slotsOf, toRanges } from "../../domain/slot-ranges.ts";
import { ReplicationSource } from "../../replication/workers/replication-primary.ts";
import { ReplicationSink } from "../../replication/workers/replication-replica.ts";
import { ClusterBusServer } from "../api/cluster-bus.ts";
import type { BusLink, Frame } from "../api/cluster-bus-link.ts";
import { KeyTransfer } from "../api/cluster-key-transfer.ts";
import { CLUSTER_REPLIES } from "../api/cluster-replies.ts";
import { type Electorate, FailureDetector } from "../domain/cluster-failure-detector.ts";
import {
  headerSlots,
  type NodeHeader,
  nodeHeader,
  parseHeader,
  parseUpdate,
} from "../domain/cluster-gossip.ts";
import { absorbHeader, type HeaderEffects, staleClaimOwners } from "../domain/cluster-gossip-apply.ts";
import { ClusterState } from "../domain/cluster-state.ts";
import { majorityLeaseUntilMs } from "../domain/cluster-write-guard.ts";
import { ReplicaElection, takeOverPrimary } from "../domain/failover-election.ts";
import { ClusterConfigStore } from "../store/cluster-config-store.ts";
import { ClusterPeers } from "./cluster-peers.ts";
import { restoreKeys } from "./cluster-restore.ts";
import { handleVoteRequest, requestVotes } from "./failover-votes.ts";

export interface ClusterLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ClusterRuntimeSettings {
  readonly busHost: string;
  /** 0 = any free port. */
  readonly busPort: number;
  readonly announceHost: string;
  /** Default: the RESP port. */
  readonly announcePort?: number;
  /** Default: the bus port. */
  readonly announceBusPort?: number;
  readonly nodeTimeoutMs: number;
  readonly requireFullCoverage: boolean;
  readonly minReplicasToWrite: number;
  readonly minReplicasMaxLagMs: number;
  readonly backlogBytes: number;
  readonly replicaOutputLimitBytes: number;
}

export interface ClusterRuntimeOptions {
  readonly keyspace: Keyspace;
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly settings: ClusterRuntimeSettings;
  readonly log: ClusterLog;
  /** What this node presents to its primary with PSYNC (masteruser/masterauth). */
  readonly masterAuth?: () => { readonly user: string; readonly password: string } | undefined;
}

/** Redis's cron runs 10 times a second; so does ours. */
export const CLUSTER_CRON_MS = 100;

export class ClusterRuntime {
  readonly keyspace: Keyspace;
  readonly slotIndex: SlotIndex;
  readonly settings: ClusterRuntimeSettings;
  readonly detector: FailureDetector;
  readonly source: ReplicationSource;
  readonly sink: ReplicationSink;
  readonly pingIntervalMs: number;
  /** Failed primary id → when this node last voted for one of its replicas. */
  readonly votedAtMs = new Map<string, number>();
  /** Replication offsets peers announced (ranks replicas in an election). */
  readonly offsets = new Map<string, number>();
  /** The bus links (and the message counters). */
  readonly peers: ClusterPeers;
  /** Redirects and refusals this node answered, by kind (CLUSTER INFO, /metrics). */
  readonly redirects = { moved: 0, ask: 0, tryagain: 0, crossslot: 0, down: 0, noreplicas: 0 };
  /**
   * Checks a replica's PSYNC credentials against this node's users (set by main.ts once the
   * RESP server, which holds them, exists); absent = no password required.
   */
  authorizeReplica: ((user: string, password: string) => boolean) | undefined;
  /** MIGRATE's blocking transport to other nodes' buses. */
  readonly transfer = new KeyTransfer();
  readonly #options: ClusterRuntimeOptions;
  readonly #election: ReplicaElection;
  #state: ClusterState | undefined;
  #store: ClusterConfigStore | undefined;
  #bus: ClusterBusServer | undefined;
  /** The cluster cron: pings, failure verdicts, elections, the lease, every CLUSTER_CRON_MS. */
  #cron: BackgroundLoop | undefined;
  #busPort = 0;
  #saveScheduled = false;
  #announceScheduled = false;
  #lastTickMs = Number.POSITIVE_INFINITY;
  #announced = { announcedHost: "", announcedPort: 0, announcedBusPort: 0 };
  #leaseUntilMs = Number.NEGATIVE_INFINITY;
  #covered = false;
  /** The view version the cached lease and coverage were computed on. */
  #healthVersion = -1;
  /** The header's slots text, formatted once per view version (every ping carries it). */
  #headerCache = { version: -1, ownerId: "", slots: "" };

  constructor(options: ClusterRuntimeOptions) {
    this.#options = options;
    this.keyspace = options.keyspace;
    this.slotIndex = options.keyspace.slotIndex;
    this.settings = options.settings;
    const nodeTimeoutMs = options.settings.nodeTimeoutMs;
    this.detector = new FailureDetector({ nodeTimeoutMs });
    this.#election = new ReplicaElection({ nodeTimeoutMs, random: options.random });
    this.pingIntervalMs = Math.min(1_000, Math.max(50, Math.floor(nodeTimeoutMs / 4)));
    this.peers = new ClusterPeers({
      nodeTimeoutMs,
      maxOutputBytes: options.settings.replicaOutputLimitBytes,
      pingIntervalMs: this.pingIntervalMs,
      addressOf: (id) => this.#state?.node(id),
      onFrame: (link, frame) => this.#onFrame(link, frame),
      log: options.log,
    });
    this.source = new ReplicationSource({
      keyspace: options.keyspace,
      slotIndex: this.slotIndex,
      clock: options.clock,
      backlogBytes: options.settings.backlogBytes,
      outputLimitBytes: options.settings.replicaOutputLimitBytes,
      minReplicasToWrite: options.settings.minReplicasToWrite,
      minReplicasMaxLagMs: options.settings.minReplicasMaxLagMs,
    });
    this.sink = new ReplicationSink({
      myId: () => this.state.myId,
      keyspace: options.keyspace,
      clock: options.clock,
      connect: (host, port) => this.peers.connect(host, port),
      onError: (error, what) => options.log.error({ err: error }, `cluster: ${what} failed`),
      ...(options.masterAuth ? { masterAuth: options.masterAuth } : {}),
    });
  }

  /** The bus port actually bound (after start). */
  get busPort(): number {
    return this.#busPort;
  }

  /** The address peers and clients are told (for logs and launchers). */
  get announced(): { announcedHost: string; announcedPort: number; announcedBusPort: number } {
    return this.#announced;
  }

  get started(): boolean {
    return this.#state !== undefined;
  }

  /** The view (after start). */
  get state(): ClusterState {
    if (this.#state === undefined) throw new Error("the cluster runtime is not started");
    return this.#state;
  }

  get log(): ClusterLog {
    return this.#options.log;
  }

  get clock(): Clock {
    return this.#options.clock;
  }

  /** Loads the persisted view from `dir` (or makes a new member), opens the bus, starts the cron. */
  async start(resp: { readonly port: number; readonly dir: string }): Promise<void> {
    const { settings } = this;
    this.#bus = new ClusterBusServer({
      host: settings.busHost,
      port: settings.busPort,
      onLink: (link) => this.peers.adopt(link),
    });
    const busPort = await this.#bus.listen();
    this.#busPort = busPort;
    this.#store = new ClusterConfigStore(resp.dir);
    const address = {
      host: settings.announceHost,
      port: settings.announcePort ?? resp.port,
      busPort: settings.announceBusPort ?? busPort,
    };
    this.#announced = {
      announcedHost: address.host,
      announcedPort: address.port,
      announcedBusPort: address.busPort,
    };
    const state = this.#store.load() ?? new ClusterState({ id: randomBytes(20).toString("hex"), ...address });
    state.updateAddress({ id: state.myId, ...address });
    this.#state = state;
    const nowMs = this.#now();
    for (const node of state.nodes()) if (node.id !== state.myId) this.detector.track(node.id, nowMs);
    if (state.myself.role === "replica" && state.myself.primaryId !== undefined) {
      this.source.deactivate();
      this.#followAddress(state.myself.primaryId);
    }
    this.#store.save(state);
    this.#cron = new BackgroundLoop({
      name: "cluster cron",
      round: async () => {
        this.#tick();
        return false;
      },
      idleMs: CLUSTER_CRON_MS,
      failureBackoff: { capMs: CLUSTER_CRON_MS, jitter: "none" },
      onError: (error) => this.log.error({ err: error }, "cluster: cron tick failed"),
      sleep: unrefSleep, // the RESP server and the bus hold the process open, not the cron
    });
    this.#cron.start();
    this.log.info({ nodeId: state.myId, ...address, role: state.myself.role }, "cluster node started");
  }

  async close(): Promise<void> {
    await this.#cron?.stop();
    this.#cron = undefined;
    this.sink.stop();
    this.source.close();
    this.peers.close();
    await this.#bus?.close();
    await this.transfer.close();
    if (this.#state !== undefined) this.#store?.saveIfChanged(this.#state);
    this.#store?.close();
  }

  /** Monotonic now, the clock of every cluster timer. */
  #now(): number {
    return this.#options.clock.monotonicMs();
  }

  /** The -CLUSTERDOWN reply when this node must not serve keys now, else undefined (CA-16). */
  servingError(): string | undefined {
    if (this.#state === undefined) return CLUSTER_REPLIES.down;
    // A new view (a node met, slots claimed) may bring voters this node has never reached: a
    // lease cached on the old view (a lone voter's is forever) must not outlive it.
    if (this.#state.version !== this.#healthVersion) this.#refreshHealth();
    if (this.settings.requireFullCoverage && !this.#covered) {
      // Cached by the cron; a slot assigned since then must not wait for the next tick.
      this.#covered = this.state.fullyCovered((id) => this.detector.isFailing(id));
      if (!this.#covered) return CLUSTER_REPLIES.down;
    }
    const nowMs = this.#now();
    if (nowMs <= this.#leaseUntilMs) return undefined;
    // On one view the cached lease is a lower bound (contacts only move forward): recompute before refusing.
    this.#leaseUntilMs = this.#computeLease();
    return nowMs <= this.#leaseUntilMs ? undefined : CLUSTER_REPLIES.down;
  }

  /** The -NOREPLICAS reply when this primary has too few good replicas to take a write. */
  writeError(): string | undefined {
    if (this.settings.minReplicasToWrite <= 0) return undefined;
    return this.#now() <= this.source.goodUntilMs ? undefined : CLUSTER_REPLIES.noReplicas;
  }

  /** Where clients reach `id`. */
  addressOf(id: string): { host: string; port: number } | undefined {
    const node = this.#state?.node(id);
    return node === undefined ? undefined : { host: node.host, port: node.port };
  }

  linkConnected(id: string): boolean {
    return id === this.state.myId || this.peers.connected(id);
  }

  /** Wall-clock ms of a monotonic instant (CLUSTER NODES prints unix ms; 0 for never). */
  wallMs(monotonicMs: number): number {
    return monotonicMs === 0 || !Number.isFinite(monotonicMs)
      ? 0
      : Math.round(this.clock.nowMs() - (this.#now() - monotonicMs));
  }

  /** CLUSTER MEET: opens a handshake; the peer becomes a member when it answers. */
  meet(host: string, port: number, busPort: number): void {
    this.peers.handshake(host, busPort, ["MEET", this.header()], (frame) => this.#onHandshakeFrame(frame));
    this.log.info({ host, port, busPort }, "cluster: meeting a node");
  }

  /** Persists the view now: before a vote or an election request leaves, and on a promotion. */
  saveConfig(): void {
    this.#saveScheduled = false;
    if (this.#state !== undefined) this.#store?.save(this.#state);
  }

  /**
   * Persists the view once the current batch of commands is done (Redis saves in
   * beforeSleep): a reshard pipelines hundreds of SETSLOTs, and one fsync each would
   * stall the node past the node timeout. The replies leave before the save; a crash in
   * between loses admin changes the tool will find missing and redo, never a vote.
   */
  requestSave(): void {
    if (this.#saveScheduled) return;
    this.#saveScheduled = true;
    setImmediate(() => {
      if (this.#saveScheduled && this.#state !== undefined) this.saveConfig();
    });
  }

  /**
   * Tells every peer this node's header (slots, configEpoch) once the current batch of commands
   * is done, instead of at the next ping: after importing slots (Redis broadcasts a PONG there
   * too), so a client refreshing its slot map from any node soon reads the new owner rather
   * than bouncing on -MOVED between a stale view and the truth. One broadcast per batch: a
   * reshard pipelines thousands of SETSLOTs.
   */
  announceSoon(): void {
    if (this.#announceScheduled) return;
    this.#announceScheduled = true;
    setImmediate(() => {
      this.#announceScheduled = false;
      if (this.#state !== undefined) this.peers.broadcast(["PONG", this.header()]);
    });
  }

  /** This node's header, as every PING/PONG/MEET carries it. */
  header(): string {
    return JSON.stringify(this.#headerFields());
  }

  #headerFields(): NodeHeader {
    const state = this.state;
    const me = state.myself;
    return nodeHeader(state, {
      flagOf: (id) => {
        const health = this.detector.health(id);
        return health?.fail ? "fail" : health?.pfail ? "pfail" : "ok";
      },
      offset: me.role === "primary" ? this.source.offset : this.sink.offset,
      slotsText: (ownerId) => {
        const cache = this.#headerCache;
        if (cache.version !== state.version || cache.ownerId !== ownerId)
          this.#headerCache = {
            version: state.version,
            ownerId,
            slots: formatRanges(toRanges(state.slotsOf(ownerId))),
          };
        return this.#headerCache.slots;
      },
    });
  }

  #onFrame(link: BusLink, frame: Frame): void {
    const kind = frame[0];
    if (kind === "PING" || kind === "MEET") this.#onPing(link, frame[1] ?? "", kind);
    else if (kind === "PONG") this.#onPong(link, frame[1] ?? "");
    else if (kind === "FAIL") this.#onFail(frame[1] ?? "");
    else if (kind === "UPDATE") this.#onUpdate(frame[1] ?? "");
    else if (kind === "AUTH-REQUEST") handleVoteRequest(this, link, frame[1] ?? "");
    else if (kind === "AUTH-ACK") this.#onVote(frame);
    else if (kind === "PSYNC") this.#onPsync(link, frame);
    else if (kind === "RESTORE") restoreKeys(this, link, frame);
  }

  #onPing(link: BusLink, body: string, kind: "PING" | "MEET"): void {
    const header = parseHeader(body);
    const state = this.state;
    const nowMs = this.#now();
    if (state.node(header.id) === undefined) {
      // Only MEET introduces a node: a stray PING from outside this cluster changes nothing.
      if (kind !== "MEET") {
        this.peers.send(link, ["PONG", this.header()]);
        return;
      }
      state.addNode(header);
      this.detector.track(header.id, nowMs);
      this.log.info({ nodeId: header.id, host: header.host, port: header.port }, "cluster: a node met us");
    }
    link.peerId = header.id;
    this.detector.pingReceived(header.id, nowMs);
    this.#applyEffects(absorbHeader(state, this.detector, header, nowMs));
    // UPDATE before PONG, on the same ordered link: a restarted old primary completes its
    // two-way contact (its serving lease) with this PONG, so by then it must already have
    // learnt who owns its former slots — else it could take a write in between (CA-16).
    for (const owner of staleClaimOwners(state, header))
      this.peers.send(link, ["UPDATE", this.#updateBody(owner)]);
    this.peers.send(link, ["PONG", this.header()]);
  }

  /** What an UPDATE says about `ownerId`: its id, configEpoch and slots. */
  #updateBody(ownerId: string): string {
    const owner = this.state.node(ownerId)!;
    return JSON.stringify({
      id: owner.id,
      configEpoch: owner.configEpoch,
      slots: formatRanges(toRanges(this.state.slotsOf(owner.id))),
    });
  }

  /** A peer says our view of some slots is stale: apply the newer owner's claim now. */
  #onUpdate(body: string): void {
    const update = parseUpdate(body);
    const state = this.state;
    const owner = state.node(update.id);
    if (owner === undefined || update.id === state.myId) return;
    if (update.configEpoch > owner.configEpoch) {
      owner.configEpoch = update.configEpoch;
      state.setPrimary(owner.id);
      state.touch();
    }
    const outcome = state.applySlotClaims(update.id, update.configEpoch, slotsOf(headerSlots(update)));
    this.#applyEffects({ newNodes: [], follow: outcome.followId, lostSlots: outcome.lostSlots });
  }

  #onPong(link: BusLink, body: string): void {
    const header = parseHeader(body);
    if (link.peerId !== undefined && link.peerId !== header.id) {
      // The address now answers with another id (a node was replaced): drop the stale link.
      link.close();
      return;
    }
    const nowMs = this.#now();
    this.detector.pongReceived(header.id, nowMs);
    this.offsets.set(header.id, header.offset);
    this.#applyEffects(absorbHeader(this.state, this.detector, header, nowMs));
  }

  /** A MEET's answer: the PONG makes the peer a member; true ends the handshake. */
  #onHandshakeFrame(frame: Frame): boolean {
    if (frame[0] !== "PONG") return false;
    const header = parseHeader(frame[1] ?? "");
    const state = this.state;
    if (state.node(header.id) === undefined && header.id !== state.myId) {
      state.addNode(header);
      this.detector.track(header.id, this.#now());
      this.log.info({ nodeId: header.id, host: header.host, port: header.port }, "cluster: met a node");
    }
    return true;
  }

  #onFail(id: string): void {
    if (id === this.state.myId || this.state.node(id) === undefined) return;
    if (this.detector.markFailed(id, this.#now()))
      this.log.warn({ nodeId: id }, "cluster: node FAIL (told by a peer)");
  }

  #onVote(frame: Frame): void {
    const voterId = frame[1] ?? "";
    const epoch = Number(frame[2]);
    if (!this.state.isVoter(voterId) || !Number.isSafeInteger(epoch)) return;
    if (this.#election.vote(voterId, epoch, this.state.quorum())) this.promote(epoch);
  }

  #onPsync(link: BusLink, frame: Frame): void {
    const [, replicaId = "", replid = "?", offsetText = "0", user = "default", password = ""] = frame;
    const me = this.state.myself;
    if (me.role !== "primary" || !this.source.active) {
      link.close();
      return;
    }
    if (this.authorizeReplica !== undefined && !this.authorizeReplica(user, password)) {
      // Redis's replica logs "-NOAUTH" / "-WRONGPASS" from its primary; here the primary says why.
      this.log.warn(
        { replicaId, user },
        "cluster: a replica's PSYNC credentials were refused: set CACHE_MASTERAUTH",
      );
      link.close();
      return;
    }
    link.peerId = replicaId;
    this.source.attach(link, replicaId, replid, Number(offsetText));
    this.log.info({ replicaId, replid, offset: Number(offsetText) }, "cluster: a replica attached");
  }

  #applyEffects(effects: HeaderEffects): void {
    if (effects.follow !== undefined) {
      this.log.warn(
        { primaryId: effects.follow },
        "cluster: our slots belong to a newer epoch: following its owner",
      );
      this.follow(effects.follow);
      return;
    }
    // Slots lost without a primary to follow: their keys are stale copies of someone else's.
    for (const slot of effects.lostSlots) {
      for (const key of this.slotIndex.keys(slot, this.slotIndex.count(slot))) this.keyspace.delete(key);
    }
  }

  /** Becomes (or re-points as) a replica of `primaryId`. */
  follow(primaryId: string): void {
    const state = this.state;
    state.setReplicaOf(state.myId, primaryId);
    this.source.deactivate();
    this.#election.reset();
    this.#followAddress(primaryId);
    this.saveConfig();
  }

  #followAddress(primaryId: string): void {
    const primary = this.state.node(primaryId);
    if (primary !== undefined)
      this.sink.follow({ id: primary.id, host: primary.host, busPort: primary.busPort });
  }

  /** Won the election (or CLUSTER FAILOVER TAKEOVER): take the old primary's slots with `epoch`, tell everyone. */
  promote(epoch: number): void {
    const state = this.state;
    const oldPrimaryId = takeOverPrimary(state, epoch);
    this.#election.reset();
    this.sink.stop();
    this.source.activate(this.sink.offset);
    this.saveConfig();
    this.log.warn({ oldPrimaryId, configEpoch: state.myself.configEpoch }, "cluster: promoted to primary");
    this.peers.broadcast(["PONG", this.header()]);
  }

  /** Sends `parts` to `id` on its outbound link (opened if needed). */
  sendTo(id: string, parts: readonly string[]): void {
    this.peers.sendTo(id, parts, this.#now());
  }

  #tick(): void {
    const nowMs = this.#now();
    const gapMs = nowMs - this.#lastTickMs;
    this.#lastTickMs = nowMs;
    // The cron ran late by much more than a period: this node was frozen, not its peers silent.
    if (gapMs > Math.max(CLUSTER_CRON_MS * 5, this.settings.nodeTimeoutMs / 2)) {
      this.detector.graceUntil(nowMs + this.settings.nodeTimeoutMs);
      this.log.warn(
        { stalledMs: Math.round(gapMs) },
        "cluster: this node was frozen; failure verdicts wait for fresh pings",
      );
    }
    try {
      this.#tickLinks(nowMs);
      this.#tickFailures(nowMs);
      this.#tickElection(nowMs);
      this.sink.tick(this.clock.nowMs());
      this.#refreshHealth();
      this.#store?.saveIfChanged(this.state);
    } catch (error) {
      this.log.error({ err: error }, "cluster: cron tick failed");
    }
  }

  #tickLinks(nowMs: number): void {
    for (const node of this.state.nodes()) {
      if (node.id === this.state.myId) continue;
      const health = this.detector.track(node.id, nowMs);
      if (nowMs - health.lastPingSentMs < this.pingIntervalMs) continue;
      const link = this.peers.link(node.id, nowMs, false);
      this.detector.pingSent(node.id, nowMs);
      if (link !== undefined) this.peers.send(link, ["PING", this.header()]);
    }
  }

  #electorate(): Electorate {
    const state = this.state;
    return {
      isVoter: (id) => state.isVoter(id),
      quorum: () => state.quorum(),
      selfVotes: state.isVoter(state.myId),
      servesSlots: (id) => state.slotCount(id) > 0,
    };
  }

  #tickFailures(nowMs: number): void {
    const { failed, cleared } = this.detector.evaluate(nowMs, this.#electorate());
    for (const id of failed) {
      this.log.warn({ nodeId: id }, "cluster: node FAIL (a quorum of primaries agrees)");
      this.peers.broadcast(["FAIL", id]);
    }
    for (const id of cleared) this.log.info({ nodeId: id }, "cluster: node FAIL cleared");
  }

  #tickElection(nowMs: number): void {
    const me = this.state.myself;
    if (me.role !== "replica" || me.primaryId === undefined) {
      this.#election.reset();
      return;
    }
    const primaryId = me.primaryId;
    const myOffset = this.sink.offset;
    const rank = this.state
      .replicasOf(primaryId)
      .filter((replica) => replica.id !== me.id && (this.offsets.get(replica.id) ?? 0) > myOffset).length;
    const step = this.#election.tick(nowMs, {
      primaryFailed: this.detector.isFailing(primaryId),
      rank,
      currentEpoch: this.state.currentEpoch,
    });
    if (step.kind === "request") requestVotes(this, step.epoch);
  }

  #computeLease(): number {
    const state = this.state;
    const contacts = state
      .voters()
      .filter((node) => node.id !== state.myId)
      .map((node) => this.detector.contactMs(node.id));
    return majorityLeaseUntilMs(contacts, {
      quorum: state.quorum(),
      selfVotes: state.isVoter(state.myId),
      nodeTimeoutMs: this.settings.nodeTimeoutMs,
    });
  }

  /** The lease and coverage, computed now: by the cron (contacts and verdicts move) and by servingError() on a new view version. */
  #refreshHealth(): void {
    this.#healthVersion = this.state.version;
    this.#leaseUntilMs = this.#computeLease();
    this.#covered = this.state.fullyCovered((id) => this.detector.isFailing(id));
  }

  /** CLUSTER INFO's cluster_state. */
  clusterOk(): boolean {
    return this.servingError() === undefined;
  }

  get election(): ReplicaElection {
    return this.#election;
  }
}

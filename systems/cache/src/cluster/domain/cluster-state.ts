/**
 * One node's view of the cluster (Redis Cluster's `clusterState`): the nodes it knows,
 * who owns each of the 16 384 slots, the slots being migrated or imported, and the
 * epochs that decide between two claims on one slot.
 *
 * Epochs (CA-16): `currentEpoch` is the cluster's logical clock, the highest any node has
 * seen; every primary carries a `configEpoch`, its version of the slots it claims. When
 * two primaries claim a slot, the higher configEpoch wins everywhere (`applySlotClaims`),
 * so an old primary coming back after a failover — with the epoch it had before — loses
 * its slots to the replica that won the election with a newer epoch, and follows it.
 *
 * Pure: no I/O and no clock; the runtime feeds it what the bus carries.
 *
 * @example
 * const state = new ClusterState({ id: "a…", host: "127.0.0.1", port: 7000, busPort: 17000 });
 * state.assign(0, state.myId);
 * state.applySlotClaims("b…", 5, [0]);   // b's newer claim wins: slot 0 now owned by b
 */
import { SLOT_COUNT } from "../../domain/slot-ranges.ts";

export type NodeRole = "primary" | "replica";

/** What every node knows of a member: address, role and config epoch (persisted, gossiped). */
export interface ClusterNodeRecord {
  readonly id: string;
  host: string;
  /** The client (RESP) port. */
  port: number;
  /** The cluster bus port: gossip, votes, replication and key migration. */
  busPort: number;
  role: NodeRole;
  primaryId: string | undefined;
  configEpoch: number;
}

export interface NodeAddress {
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly busPort: number;
}

/** What a slot claim changed for this node. */
export interface SlotClaimOutcome {
  /** Slots that changed owner in this view. */
  readonly reassigned: number;
  /** Slots this node served and lost: their keys are no longer ours (the new owner is the truth). */
  readonly lostSlots: readonly number[];
  /** Set when this node must now replicate `followId`: it (or its primary) lost its last slot to it. */
  readonly followId: string | undefined;
}

export class ClusterState {
  readonly myId: string;
  /** The highest epoch this node has seen (Redis's currentEpoch). */
  currentEpoch = 0;
  /** The epoch this node last voted in: one vote per epoch, persisted before the vote leaves. */
  lastVoteEpoch = 0;
  /** slot → the node it is moving to (set on the owner by SETSLOT MIGRATING). */
  readonly migrating = new Map<number, string>();
  /** slot → the node it comes from (set on the target by SETSLOT IMPORTING). */
  readonly importing = new Map<number, string>();
  readonly #nodes = new Map<string, ClusterNodeRecord>();
  readonly #owners: Array<string | undefined> = new Array(SLOT_COUNT);
  readonly #slotCounts = new Map<string, number>();
  #version = 0;

  constructor(myself: NodeAddress) {
    this.myId = myself.id;
    this.#nodes.set(myself.id, { ...myself, role: "primary", primaryId: undefined, configEpoch: 0 });
  }

  /** Bumps on every change worth persisting; the runtime saves the config when it moved. */
  get version(): number {
    return this.#version;
  }

  /** Records a change made directly on a record or map (epochs, migrating/importing). */
  touch(): void {
    this.#version += 1;
  }

  get myself(): ClusterNodeRecord {
    return this.#nodes.get(this.myId)!;
  }

  node(id: string): ClusterNodeRecord | undefined {
    return this.#nodes.get(id);
  }

  nodes(): IterableIterator<ClusterNodeRecord> {
    return this.#nodes.values();
  }

  get nodeCount(): number {
    return this.#nodes.size;
  }

  /** Adds a member (as a slotless primary until its own messages say more); returns its record. */
  addNode(address: NodeAddress): ClusterNodeRecord {
    const known = this.#nodes.get(address.id);
    if (known !== undefined) return known;
    const record: ClusterNodeRecord = { ...address, role: "primary", primaryId: undefined, configEpoch: 0 };
    this.#nodes.set(address.id, record);
    this.touch();
    return record;
  }

  /** Adds a persisted record as is (config load). */
  restoreNode(record: ClusterNodeRecord): void {
    this.#nodes.set(record.id, { ...record });
    this.touch();
  }

  updateAddress(address: NodeAddress): void {
    const record = this.#nodes.get(address.id);
    if (record === undefined) return;
    if (record.host === address.host && record.port === address.port && record.busPort === address.busPort)
      return;
    record.host = address.host;
    record.port = address.port;
    record.busPort = address.busPort;
    this.touch();
  }

  owner(slot: number): string | undefined {
    return this.#owners[slot];
  }

  slotCount(id: string): number {
    return this.#slotCounts.get(id) ?? 0;
  }

  /** The slots `id` owns, ascending. O(16384): for gossip (cached by the caller) and commands. */
  slotsOf(id: string): number[] {
    const slots: number[] = [];
    if (this.slotCount(id) === 0) return slots;
    for (let slot = 0; slot < SLOT_COUNT; slot++) if (this.#owners[slot] === id) slots.push(slot);
    return slots;
  }

  /** Sets (or clears, with undefined) the owner of `slot`. */
  assign(slot: number, id: string | undefined): void {
    const before = this.#owners[slot];
    if (before === id) return;
    if (before !== undefined) this.#slotCounts.set(before, this.slotCount(before) - 1);
    if (id !== undefined) this.#slotCounts.set(id, this.slotCount(id) + 1);
    this.#owners[slot] = id;
    this.touch();
  }

  /** Slots with an owner. */
  assignedSlots(): number {
    let total = 0;
    for (const count of this.#slotCounts.values()) total += count;
    return total;
  }

  /** Primaries serving at least one slot: the voters of failure detection and elections. */
  voters(): ClusterNodeRecord[] {
    return [...this.#nodes.values()].filter((node) => node.role === "primary" && this.slotCount(node.id) > 0);
  }

  /** Votes needed for FAIL and for an election: a majority of the voters (Redis's cluster size). */
  quorum(): number {
    return Math.floor(this.voters().length / 2) + 1;
  }

  isVoter(id: string): boolean {
    const node = this.#nodes.get(id);
    return node !== undefined && node.role === "primary" && this.slotCount(id) > 0;
  }

  replicasOf(primaryId: string): ClusterNodeRecord[] {
    return [...this.#nodes.values()].filter(
      (node) => node.role === "replica" && node.primaryId === primaryId,
    );
  }

  setPrimary(id: string): void {
    const record = this.#nodes.get(id);
    if (record === undefined || (record.role === "primary" && record.primaryId === undefined)) return;
    record.role = "primary";
    record.primaryId = undefined;
    this.touch();
  }

  setReplicaOf(id: string, primaryId: string): void {
    const record = this.#nodes.get(id);
    if (record === undefined || (record.role === "replica" && record.primaryId === primaryId)) return;
    record.role = "replica";
    record.primaryId = primaryId;
    this.touch();
  }

  /** Adopts a higher currentEpoch seen on the bus; true when it moved. */
  observeEpoch(epoch: number): boolean {
    if (epoch <= this.currentEpoch) return false;
    this.currentEpoch = epoch;
    this.touch();
    return true;
  }

  maxConfigEpoch(): number {
    let max = 0;
    for (const node of this.#nodes.values()) max = Math.max(max, node.configEpoch);
    return max;
  }

  /**
   * Takes a new configEpoch without asking anyone (Redis's clusterBumpConfigEpochWithoutConsensus):
   * used when SETSLOT NODE hands this node a slot, so its claim outranks the previous owner's.
   * Safe because the previous owner agreed (it ran SETSLOT too); collisions are resolved below.
   */
  bumpConfigEpochWithoutConsensus(): boolean {
    const me = this.myself;
    if (me.configEpoch !== 0 && me.configEpoch === this.maxConfigEpoch()) return false;
    this.currentEpoch += 1;
    me.configEpoch = this.currentEpoch;
    this.touch();
    return true;
  }

  /**
   * Two primaries with one configEpoch would tie forever on a contested slot: the one with
   * the smaller node id takes a fresh epoch (Redis's clusterHandleConfigEpochCollision).
   */
  resolveEpochCollision(senderId: string): boolean {
    const sender = this.#nodes.get(senderId);
    const me = this.myself;
    if (sender === undefined || sender.role !== "primary" || me.role !== "primary") return false;
    if (sender.configEpoch !== me.configEpoch || senderId <= this.myId) return false;
    this.currentEpoch += 1;
    me.configEpoch = this.currentEpoch;
    this.touch();
    return true;
  }

  /**
   * A primary claims `slots` with `configEpoch`: each slot whose owner has an older epoch (or
   * none) goes to the sender, except slots this node is importing (the reshard decides those).
   * If this node's primary — or this node, as a primary — lost its last slot to the sender,
   * the outcome says to follow the sender: that is how a deposed primary becomes a replica.
   */
  applySlotClaims(senderId: string, configEpoch: number, slots: Iterable<number>): SlotClaimOutcome {
    const me = this.myself;
    const myPrimaryId = me.role === "primary" ? this.myId : me.primaryId;
    const lostSlots: number[] = [];
    let reassigned = 0;
    let primaryLostToSender = false;
    if (senderId === this.myId) return { reassigned, lostSlots, followId: undefined };
    for (const slot of slots) {
      const owner = this.#owners[slot];
      if (owner === senderId || this.importing.has(slot)) continue;
      const ownerEpoch = owner === undefined ? -1 : (this.#nodes.get(owner)?.configEpoch ?? -1);
      if (ownerEpoch >= configEpoch) continue;
      if (owner === this.myId) lostSlots.push(slot);
      if (owner !== undefined && owner === myPrimaryId) primaryLostToSender = true;
      this.migrating.delete(slot);
      this.assign(slot, senderId);
      reassigned += 1;
    }
    const follow =
      primaryLostToSender && myPrimaryId !== undefined && this.slotCount(myPrimaryId) === 0
        ? senderId
        : undefined;
    return { reassigned, lostSlots, followId: follow };
  }

  /** Whether every slot has an owner that `failing` does not flag (Redis's full coverage). */
  fullyCovered(failing: (id: string) => boolean): boolean {
    if (this.assignedSlots() !== SLOT_COUNT) return false;
    for (const [id, count] of this.#slotCounts) if (count > 0 && failing(id)) return false;
    return true;
  }
}

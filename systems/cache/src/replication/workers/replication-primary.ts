/**
 * The primary's side of replication (CA-14, CA-17): asynchronous, like Redis. A write
 * is acknowledged to the client first; its effect reaches replicas a moment later.
 *
 * - Effects, not commands: after each write the stream carries the key's resulting state
 *   (`S key value expiresAtMs`), a removal (`D key`: deletes, and also expirations and
 *   evictions, so a replica never diverges by expiring or evicting on its own) or `F`
 *   (flush). Replaying effects is deterministic whatever the command was (INCR, SET NX,
 *   EXPIRE with a relative time), as Redis's effects replication.
 * - Every entry goes into the backlog (offset = entries so far). A replica that connects
 *   sends `PSYNC <its id> <replid> <offset>`: inside the backlog it gets `CONTINUE` and the
 *   missing entries; otherwise `FULLRESYNC replid offset`, a snapshot (`SNAP` frames of at
 *   most `SNAPSHOT_BATCH_KEYS` keys), `SNAPEND`, then the live stream.
 * - Entries leave in one write per replica per event-loop turn (batched), and each
 *   replica's unsent bytes are bounded: past `outputLimitBytes` it is dropped and resyncs.
 * - Replicas acknowledge (`ACK offset`); `goodUntilMs` is how long the primary may still
 *   take writes under min-replicas-to-write (see cluster-write-guard.ts).
 * - WAIT blocks a client until enough replicas acknowledged an offset (`waitForAcks`):
 *   the only way a client learns that its write is on a replica and survives a failover.
 *
 * @example
 * const source = new ReplicationSource({ keyspace, slotIndex, clock, backlogBytes: 1 << 20, … });
 * source.propagateSet("k", "v", 0);  // streamed to every replica
 * source.attach(link, replicaId, "?", 0); // a new replica: full sync
 */
import { randomBytes } from "node:crypto";
import type { Clock } from "@casebook/kit/clock";
import { type BusLink, encodeFrame, type Frame } from "../../cluster/api/cluster-bus-link.ts";
import { goodReplicasUntilMs } from "../../cluster/domain/cluster-write-guard.ts";
import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import type { Keyspace } from "../../domain/keyspace.ts";
import type { SlotIndex } from "../../domain/slot-index.ts";
import { ReplicationBacklog } from "../domain/replication-backlog.ts";

/** Keys per SNAP frame: a frame stays small (a few MB at most) whatever the dataset. */
export const SNAPSHOT_BATCH_KEYS = 1_000;

export interface ReplicaInfo {
  readonly id: string;
  readonly link: BusLink;
  /** Offset the replica acknowledged. */
  ackOffset: number;
  ackMs: number;
  /** Offset of the last entry written to its link. */
  sentOffset: number;
}

export interface ReplicationSourceOptions {
  readonly keyspace: Keyspace;
  readonly slotIndex: SlotIndex;
  readonly clock: Clock;
  readonly backlogBytes: number;
  readonly outputLimitBytes: number;
  readonly minReplicasToWrite: number;
  readonly minReplicasMaxLagMs: number;
}

/** A WAIT in progress: settles once `needed` replicas acknowledged `offset`, or on its timer. */
interface AckWaiter {
  readonly offset: number;
  readonly needed: number;
  readonly resolve: (acknowledged: number) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** A fresh replication id: 40 hex chars, as Redis's. */
export function newReplicationId(): string {
  return randomBytes(20).toString("hex");
}

export class ReplicationSource {
  readonly #options: ReplicationSourceOptions;
  readonly #backlog: ReplicationBacklog;
  readonly #replicas = new Map<BusLink, ReplicaInfo>();
  #pending: Array<{ offset: number; frame: Buffer }> = [];
  #flushScheduled = false;
  #replid = newReplicationId();
  #active = true;
  #goodUntilMs = Number.NEGATIVE_INFINITY;
  /** Bounded by the connected clients: a connection blocks on at most one WAIT at a time. */
  readonly #waiters = new Set<AckWaiter>();

  constructor(options: ReplicationSourceOptions) {
    this.#options = options;
    this.#backlog = new ReplicationBacklog({ maxBytes: options.backlogBytes });
    this.#recomputeGood();
  }

  get replid(): string {
    return this.#replid;
  }

  get offset(): number {
    return this.#backlog.offset;
  }

  /** False while this node is a replica: its own keyspace changes are not a stream. */
  get active(): boolean {
    return this.#active;
  }

  replicas(): IterableIterator<ReplicaInfo> {
    return this.#replicas.values();
  }

  /** Until when (monotonic ms) writes are allowed under min-replicas-to-write. */
  get goodUntilMs(): number {
    return this.#goodUntilMs;
  }

  /** Clients blocked in WAIT (INFO's blocked_clients). */
  get waitingClients(): number {
    return this.#waiters.size;
  }

  /** How many replicas acknowledged at least `offset`. */
  acknowledged(offset: number): number {
    let count = 0;
    for (const info of this.#replicas.values()) if (info.ackOffset >= offset) count += 1;
    return count;
  }

  /**
   * Settles with the number of replicas that acknowledged `offset`, once `needed` did or
   * after `timeoutMs` (0 = no timeout, as WAIT's), whichever comes first. `cancel` drops
   * the wait (its client disconnected) without settling.
   */
  waitForAcks(
    offset: number,
    needed: number,
    timeoutMs: number,
  ): { settled: Promise<number>; cancel(): void } {
    let waiter: AckWaiter | undefined;
    const settled = new Promise<number>((resolve) => {
      waiter = { offset, needed, resolve, timer: undefined };
    });
    const entry = waiter!;
    this.#waiters.add(entry);
    if (timeoutMs > 0) entry.timer = setTimeout(() => this.#settle(entry), timeoutMs);
    // Entries still queued for this turn's batch go out now: the wait starts from the replicas' side at once.
    this.flush();
    this.#settleReached();
    return {
      settled,
      cancel: () => {
        clearTimeout(entry.timer);
        this.#waiters.delete(entry);
      },
    };
  }

  propagateSet(key: string, value: string, expiresAtMs: number): void {
    if (this.#active) this.#append(encodeFrame(["S", key, value, String(expiresAtMs)]));
  }

  propagateDelete(key: string): void {
    if (this.#active) this.#append(encodeFrame(["D", key]));
  }

  propagateFlush(): void {
    if (this.#active) this.#append(encodeFrame(["F"]));
  }

  /** A replica asked to sync on `link`: partial resync when its position is in the backlog, else full. */
  attach(link: BusLink, replicaId: string, replid: string, offset: number): void {
    this.flush();
    for (const [other, info] of this.#replicas) if (info.id === replicaId) this.#drop(other);
    const entries = replid === this.#replid ? this.#backlog.since(offset) : undefined;
    let sentOffset: number;
    if (entries !== undefined) {
      link.send(["CONTINUE", this.#replid, String(offset)]);
      for (const entry of entries) link.sendEncoded(entry);
      sentOffset = this.#backlog.offset;
    } else {
      sentOffset = this.#sendSnapshot(link);
    }
    const info: ReplicaInfo = {
      id: replicaId,
      link,
      ackOffset: -1,
      ackMs: this.#options.clock.monotonicMs(),
      sentOffset,
    };
    this.#replicas.set(link, info);
    link.onFrame = (frame) => this.#onReplicaFrame(info, frame);
    link.onClose = () => this.#drop(link);
    // Anything appended while the snapshot was written (lazy expirations) follows it.
    this.flush();
  }

  /** Stops being a source (this node became a replica): drops every replica link. */
  deactivate(): void {
    this.#active = false;
    this.#pending = [];
    // A deposed primary's WAITs answer now, with what its replicas had acknowledged.
    for (const waiter of [...this.#waiters]) this.#settle(waiter);
    for (const link of [...this.#replicas.keys()]) this.#drop(link);
  }

  /** Becomes a source again with a new history (a promoted replica keeps counting from `offset`). */
  activate(offset: number): void {
    this.#replid = newReplicationId();
    this.#backlog.reset(offset);
    this.#active = true;
    this.#recomputeGood();
  }

  /** Writes the pending entries to every replica (one write each), dropping any over its output limit. */
  flush(): void {
    this.#flushScheduled = false;
    const pending = this.#pending;
    if (pending.length === 0) return;
    this.#pending = [];
    for (const [link, info] of this.#replicas) {
      const frames = pending.filter((entry) => entry.offset > info.sentOffset).map((entry) => entry.frame);
      if (frames.length === 0) continue;
      link.sendEncoded(frames.length === 1 ? frames[0]! : Buffer.concat(frames));
      info.sentOffset = pending.at(-1)!.offset;
      if (link.pendingOutputBytes > this.#options.outputLimitBytes) this.#drop(link);
    }
  }

  close(): void {
    this.deactivate();
  }

  #append(frame: Buffer): void {
    this.#backlog.append(frame);
    if (this.#replicas.size === 0) return;
    this.#pending.push({ offset: this.#backlog.offset, frame });
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  /** Streams a consistent snapshot (the event loop runs nothing else meanwhile); returns its offset. */
  #sendSnapshot(link: BusLink): number {
    const { keyspace, slotIndex, clock } = this.#options;
    const offset = this.#backlog.offset;
    link.send(["FULLRESYNC", this.#replid, String(offset)]);
    const nowMs = clock.nowMs();
    let batch: string[] = ["SNAP"];
    for (const key of slotIndex.all()) {
      const entry = keyspace.lookup(key);
      if (entry === undefined || (entry.expiresAtMs !== NO_EXPIRY && entry.expiresAtMs < nowMs)) continue;
      batch.push(key, entry.value, String(entry.expiresAtMs));
      if (batch.length > SNAPSHOT_BATCH_KEYS * 3) {
        link.send(batch);
        batch = ["SNAP"];
      }
    }
    if (batch.length > 1) link.send(batch);
    link.send(["SNAPEND"]);
    if (link.pendingOutputBytes > this.#options.outputLimitBytes) link.close();
    return offset;
  }

  #onReplicaFrame(info: ReplicaInfo, frame: Frame): void {
    if (frame[0] !== "ACK") return;
    const offset = Number(frame[1]);
    if (!Number.isSafeInteger(offset) || offset < 0) return;
    info.ackOffset = Math.max(info.ackOffset, offset);
    info.ackMs = this.#options.clock.monotonicMs();
    this.#recomputeGood();
    this.#settleReached();
  }

  #settleReached(): void {
    for (const waiter of [...this.#waiters]) {
      if (this.acknowledged(waiter.offset) >= waiter.needed) this.#settle(waiter);
    }
  }

  #settle(waiter: AckWaiter): void {
    if (!this.#waiters.delete(waiter)) return;
    clearTimeout(waiter.timer);
    waiter.resolve(this.acknowledged(waiter.offset));
  }

  #drop(link: BusLink): void {
    if (!this.#replicas.delete(link)) return;
    link.close();
    this.#recomputeGood();
  }

  #recomputeGood(): void {
    const acks = [...this.#replicas.values()].filter((info) => info.ackOffset >= 0).map((info) => info.ackMs);
    this.#goodUntilMs = goodReplicasUntilMs(acks, {
      minReplicas: this.#options.minReplicasToWrite,
      maxLagMs: this.#options.minReplicasMaxLagMs,
    });
  }
}

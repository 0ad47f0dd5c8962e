/**
 * The replica's side of replication: one outbound bus link to its primary, which it
 * (re)opens while it follows one. On connect it sends `PSYNC <my id> <replid> <offset>`:
 * a replica that only lost its link for a moment continues from the backlog; a new one,
 * or one that followed another primary (a deposed primary now following its replacement),
 * gets a full sync — its keyspace is flushed and replaced by the primary's, which is
 * where the old primary's unreplicated writes disappear (CA-14's lost v7).
 *
 * It applies the stream's effects straight to the keyspace (no command dispatch: a
 * replica does not route or re-replicate them) and acknowledges its offset after each
 * batch and every `ackIntervalMs`, which the primary's min-replicas check reads.
 *
 * @example
 * const sink = new ReplicationSink({ keyspace, clock, connect: (host, port) => connectBusLink(…), myId: () => id });
 * sink.follow({ id, host, busPort });
 * sink.tick(nowMs);      // reconnects when the link dropped, acks on time
 * sink.offset;           // entries applied in the primary's history
 */
import type { Clock } from "@casebook/kit/clock";
import type { BusLink, Frame } from "../../cluster/api/cluster-bus-link.ts";
import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import type { Keyspace } from "../../domain/keyspace.ts";

export interface PrimaryAddress {
  readonly id: string;
  readonly host: string;
  readonly busPort: number;
}

export interface ReplicationSinkOptions {
  /** This node's id (known once the runtime loaded its config). */
  readonly myId: () => string;
  readonly keyspace: Keyspace;
  readonly clock: Clock;
  readonly connect: (host: string, port: number) => BusLink;
  /** Pause between acknowledgements when nothing arrives. Default 100 ms. */
  readonly ackIntervalMs?: number;
  /** Pause before reopening a dropped link. Default 200 ms. */
  readonly reconnectDelayMs?: number;
  readonly onError?: (error: unknown, what: string) => void;
  /**
   * Credentials sent with PSYNC (Redis's masteruser/masterauth): a primary that requires a
   * password refuses a replica without them. Read at each connect, so CONFIG SET applies.
   */
  readonly masterAuth?: () => { readonly user: string; readonly password: string } | undefined;
}

/** An absolute expiry from the stream; a malformed one (a bug on the primary) keeps the key without TTL. */
function expiryOf(text: string | undefined): number {
  const value = Number(text);
  return Number.isSafeInteger(value) && value >= 0 ? value : NO_EXPIRY;
}

export type SinkState = "none" | "connecting" | "sync" | "connected";

export class ReplicationSink {
  readonly #options: ReplicationSinkOptions;
  #primary: PrimaryAddress | undefined;
  #link: BusLink | undefined;
  #state: SinkState = "none";
  #replid = "?";
  #offset = 0;
  #lastIoMs = 0;
  #lastAckMs = 0;
  #nextConnectMs = 0;
  #ackScheduled = false;
  #fullSyncs = 0;
  #applyErrors = 0;

  constructor(options: ReplicationSinkOptions) {
    this.#options = options;
  }

  get state(): SinkState {
    return this.#state;
  }

  get primaryId(): string | undefined {
    return this.#primary?.id;
  }

  get replid(): string {
    return this.#replid;
  }

  get offset(): number {
    return this.#offset;
  }

  get lastIoMs(): number {
    return this.#lastIoMs;
  }

  get fullSyncs(): number {
    return this.#fullSyncs;
  }

  /** Entries a full keyspace refused (maxmemory under noeviction on the replica). */
  get applyErrors(): number {
    return this.#applyErrors;
  }

  /** Starts (or switches) following `primary`. */
  follow(primary: PrimaryAddress): void {
    const same =
      this.#primary?.id === primary.id &&
      this.#primary.host === primary.host &&
      this.#primary.busPort === primary.busPort;
    if (same) return;
    this.#primary = primary;
    this.#closeLink();
    this.#nextConnectMs = 0;
    this.tick(this.#options.clock.nowMs());
  }

  /** Stops following (this node became a primary); keeps the offset it reached. */
  stop(): void {
    this.#primary = undefined;
    this.#closeLink();
  }

  /** Reconnects when due, acknowledges when due. */
  tick(nowMs: number): void {
    if (this.#primary === undefined) return;
    if (this.#link === undefined && nowMs >= this.#nextConnectMs) this.#open(this.#primary);
    if (this.#state === "connected" && nowMs - this.#lastAckMs >= (this.#options.ackIntervalMs ?? 100)) {
      this.#ack();
    }
  }

  #open(primary: PrimaryAddress): void {
    const link = this.#options.connect(primary.host, primary.busPort);
    this.#link = link;
    this.#state = "connecting";
    link.onFrame = (frame) => this.#onFrame(frame);
    link.onError = (error) => this.#options.onError?.(error, "replication link");
    link.onClose = () => {
      if (this.#link !== link) return;
      this.#link = undefined;
      this.#state = "none";
      this.#nextConnectMs = this.#options.clock.nowMs() + (this.#options.reconnectDelayMs ?? 200);
    };
    const auth = this.#options.masterAuth?.();
    const credentials = auth === undefined ? [] : [auth.user, auth.password];
    link.send(["PSYNC", this.#options.myId(), this.#replid, String(this.#offset), ...credentials]);
  }

  #closeLink(): void {
    const link = this.#link;
    this.#link = undefined;
    this.#state = "none";
    link?.close();
  }

  #onFrame(frame: Frame): void {
    this.#lastIoMs = this.#options.clock.nowMs();
    const kind = frame[0];
    if (kind === "S" || kind === "D" || kind === "F") {
      this.#applyEffect(frame);
      this.#offset += 1;
      this.#scheduleAck();
    } else if (kind === "SNAP") {
      this.#applySnapshot(frame);
    } else if (kind === "FULLRESYNC") {
      this.#options.keyspace.flush();
      this.#replid = frame[1] ?? "?";
      this.#offset = Number(frame[2] ?? 0);
      this.#state = "sync";
      this.#fullSyncs += 1;
    } else if (kind === "SNAPEND") {
      this.#state = "connected";
      this.#ack();
    } else if (kind === "CONTINUE") {
      this.#replid = frame[1] ?? this.#replid;
      this.#state = "connected";
      this.#ack();
    }
  }

  #applyEffect(frame: Frame): void {
    const { keyspace } = this.#options;
    if (frame[0] === "D") keyspace.delete(frame[1]!);
    else if (frame[0] === "F") keyspace.flush();
    else if (!keyspace.set(frame[1]!, frame[2]!, expiryOf(frame[3]))) this.#applyErrors += 1;
  }

  #applySnapshot(frame: Frame): void {
    const { keyspace, clock } = this.#options;
    const nowMs = clock.nowMs();
    for (let i = 1; i + 2 < frame.length; i += 3) {
      const expiresAtMs = expiryOf(frame[i + 2]);
      if (expiresAtMs !== NO_EXPIRY && expiresAtMs < nowMs) continue;
      if (!keyspace.set(frame[i]!, frame[i + 1]!, expiresAtMs)) this.#applyErrors += 1;
    }
  }

  #scheduleAck(): void {
    if (this.#ackScheduled || this.#state !== "connected") return;
    this.#ackScheduled = true;
    // One ACK per burst of entries (one event-loop turn), not one per entry.
    setImmediate(() => {
      this.#ackScheduled = false;
      this.#ack();
    });
  }

  #ack(): void {
    if (this.#link === undefined || this.#state !== "connected") return;
    this.#lastAckMs = this.#options.clock.nowMs();
    this.#link.send(["ACK", String(this.#offset)]);
  }
}

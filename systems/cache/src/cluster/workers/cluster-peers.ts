/**
 * One node's links on the cluster bus: an outbound link to every known peer (opened on
 * demand, reopened at most once per ping interval unless a message must go now), the
 * handshakes CLUSTER MEET opens, and the message counters CLUSTER INFO reports. Full mesh:
 * right for the tens of nodes a local cluster has (Redis pings a random few per second to
 * scale to a thousand). What the frames mean is the runtime's (cluster-runtime.ts); this
 * file only keeps the links.
 *
 * @example
 * const peers = new ClusterPeers({ nodeTimeoutMs: 15_000, maxOutputBytes: 1 << 26, pingIntervalMs: 1_000,
 *   addressOf: (id) => state.node(id), onFrame: (link, frame) => dispatch(link, frame), log });
 * peers.sendTo(nodeId, ["PING", header], clock.monotonicMs());
 * peers.broadcast(["FAIL", nodeId]);
 * peers.close();
 */
import { type BusLink, connectBusLink, type Frame } from "../api/cluster-bus-link.ts";

export interface ClusterPeersLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

export interface ClusterPeersOptions {
  readonly nodeTimeoutMs: number;
  /** A link's output buffer bound (a replica's stream rides the same links). */
  readonly maxOutputBytes: number;
  /** Least time between two connection attempts to one peer. */
  readonly pingIntervalMs: number;
  /** Where a known node's bus listens; undefined for an unknown id. */
  readonly addressOf: (id: string) => { readonly host: string; readonly busPort: number } | undefined;
  /** A frame on a peer's outbound link, or on an inbound link adopted here. */
  readonly onFrame: (link: BusLink, frame: Frame) => void;
  readonly log: ClusterPeersLog;
}

export class ClusterPeers {
  /** Bus messages this node sent and received (CLUSTER INFO, /metrics). */
  readonly messages = { sent: 0, received: 0 };
  readonly #o: ClusterPeersOptions;
  readonly #links = new Map<string, BusLink>();
  readonly #connectAttemptMs = new Map<string, number>();
  readonly #handshakes = new Set<BusLink>();

  constructor(options: ClusterPeersOptions) {
    this.#o = options;
  }

  /** A new link to a bus (a peer, a handshake, a replica's PSYNC). */
  connect(host: string, port: number): BusLink {
    return connectBusLink({
      host,
      port,
      connectTimeoutMs: Math.max(100, Math.floor(this.#o.nodeTimeoutMs / 2)),
      maxOutputBytes: this.#o.maxOutputBytes,
    });
  }

  /** Sends on `link`, counting what was queued. */
  send(link: BusLink, parts: readonly string[]): void {
    if (link.send(parts)) this.messages.sent += 1;
  }

  /** An inbound link: its frames go to onFrame until its first frame says otherwise (PSYNC, RESTORE). */
  adopt(link: BusLink): void {
    link.onFrame = (frame) => this.#received(link, frame);
    link.onError = (error) => this.#o.log.warn({ err: error }, "cluster: a bus link failed");
  }

  /**
   * CLUSTER MEET: a handshake link that sends `hello` and hands the first frame to `onAnswer`;
   * it closes after a node timeout if nothing answers.
   */
  handshake(
    host: string,
    busPort: number,
    hello: readonly string[],
    onAnswer: (frame: Frame) => boolean,
  ): void {
    const link = this.connect(host, busPort);
    this.#handshakes.add(link);
    link.onFrame = (frame) => {
      if (!onAnswer(frame)) return;
      this.#handshakes.delete(link);
      link.close();
    };
    link.onClose = () => this.#handshakes.delete(link);
    const timer = setTimeout(() => link.close(), this.#o.nodeTimeoutMs);
    timer.unref();
    this.send(link, hello);
  }

  /** Whether this node's outbound link to `id` is up. */
  connected(id: string): boolean {
    return this.#links.get(id)?.connected === true;
  }

  /** Sends to `id` on its outbound link, opened now if needed (a vote, a FAIL must not wait). */
  sendTo(id: string, parts: readonly string[], nowMs: number): void {
    const link = this.link(id, nowMs, true);
    if (link !== undefined) this.send(link, parts);
  }

  /** Sends to every peer with an outbound link. */
  broadcast(parts: readonly string[]): void {
    for (const link of this.#links.values()) this.send(link, parts);
  }

  /** The outbound link to `id`: reopened at most once per ping interval unless `force`. */
  link(id: string, nowMs: number, force: boolean): BusLink | undefined {
    const known = this.#links.get(id);
    if (known !== undefined && !known.closed) return known;
    const node = this.#o.addressOf(id);
    if (node === undefined) return undefined;
    const lastAttemptMs = this.#connectAttemptMs.get(id) ?? Number.NEGATIVE_INFINITY;
    if (!force && nowMs - lastAttemptMs < this.#o.pingIntervalMs) return undefined;
    this.#connectAttemptMs.set(id, nowMs);
    const link = this.connect(node.host, node.busPort);
    link.peerId = id;
    link.onFrame = (frame) => this.#received(link, frame);
    link.onError = (error) => this.#o.log.warn({ err: error, nodeId: id }, "cluster: a peer link failed");
    link.onClose = () => {
      if (this.#links.get(id) === link) this.#links.delete(id);
    };
    this.#links.set(id, link);
    return link;
  }

  /** Closes every outbound link and handshake. */
  close(): void {
    for (const link of [...this.#links.values(), ...this.#handshakes]) link.close();
    this.#links.clear();
    this.#handshakes.clear();
  }

  #received(link: BusLink, frame: Frame): void {
    this.messages.received += 1;
    this.#o.onFrame(link, frame);
  }
}

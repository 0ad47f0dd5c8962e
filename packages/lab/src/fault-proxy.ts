/**
 * A TCP proxy between clients and one upstream (an engine, a service) that injects
 * network faults at runtime: latency with jitter, a blackhole, refused connections,
 * cut links, and heal. Tests put it in front of an engine to prove what a system
 * does when its link is slow, silent or gone.
 *
 * @example
 * const proxy = await startFaultProxy({ upstream: "127.0.0.1:6379" });
 * const redis = new Redis(proxy.url("redis"), { commandTimeout: 200 });
 * proxy.setLatency(50);          // every chunk waits 50 ms each way
 * proxy.blackhole(true);         // nothing passes: commands time out
 * proxy.cutAll();                // every open link is reset
 * await proxy.refuse(true);      // new connections: ECONNREFUSED
 * await proxy.heal();            // all faults lifted
 * await proxy.close();
 */
import { connect, createServer, type Server, type Socket } from "node:net";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { DelayedPipe, type PipeMode } from "./delayed-pipe.ts";
import { labErrors } from "./lab-errors.ts";

export interface FaultProxyOptions {
  /** Where links go: `{ host, port }`, "host:port", or a URL such as `redis://127.0.0.1:6379`. */
  upstream: { host: string; port: number } | string;
  /** Address the proxy listens on. Default 127.0.0.1. */
  listenHost?: string;
  /** Bound on bytes queued per direction per link; past it the proxy stops reading. Default 1 MiB. */
  maxBufferedBytes?: number;
  /** Bound on connecting to the upstream; the client's link is reset after it. Default 5 000 ms. */
  connectTimeoutMs?: number;
  /** Source of jitter, injected so tests are reproducible. Default Math.random. */
  random?: RandomSource;
}

export type LinkDirection = "up" | "down" | "both";

export interface LatencyOptions {
  /** Extra delay drawn uniformly from [0, jitterMs) per chunk. Default 0. */
  jitterMs?: number;
  /** "up" is client→upstream, "down" upstream→client. Default "both". */
  direction?: LinkDirection;
}

export interface FaultProxyStats {
  /** Links accepted since start. */
  accepted: number;
  /** Links open now. */
  active: number;
  /** Bytes delivered client→upstream and upstream→client. */
  bytesUp: number;
  bytesDown: number;
  /** Bytes read and thrown away by a discarding blackhole. */
  bytesDropped: number;
  /** Bytes read and not yet delivered, over all open links. */
  bytesBuffered: number;
  /** Times a link stopped reading because its queue was full. */
  readPauses: number;
}

interface Link {
  client: Socket;
  upstream: Socket;
  up: DelayedPipe;
  down: DelayedPipe;
}

interface Latency {
  baseMs: number;
  jitterMs: number;
}

function parseUpstream(upstream: FaultProxyOptions["upstream"]): { host: string; port: number } {
  if (typeof upstream !== "string") return upstream;
  const url = new URL(upstream.includes("://") ? upstream : `tcp://${upstream}`);
  const port = Number(url.port);
  if (!Number.isInteger(port) || port <= 0) {
    throw new TypeError(`fault proxy upstream ${upstream} needs an explicit port`);
  }
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ port, host, exclusive: true }, () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : port);
    });
  });
}

/** Starts a fault proxy on a free port in front of `options.upstream`. */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const proxy = new FaultProxy(options);
  await proxy.listen();
  return proxy;
}

export class FaultProxy {
  readonly host: string;
  readonly upstream: { host: string; port: number };
  #port = 0;
  #server: Server | undefined;
  #closed = false;
  readonly #links = new Set<Link>();
  readonly #maxBufferedBytes: number;
  readonly #connectTimeoutMs: number;
  readonly #random: RandomSource;
  #up: Latency = { baseMs: 0, jitterMs: 0 };
  #down: Latency = { baseMs: 0, jitterMs: 0 };
  #mode: PipeMode = "pass";
  #refusing = false;
  readonly #totals = { accepted: 0, bytesUp: 0, bytesDown: 0, bytesDropped: 0, readPauses: 0 };

  constructor(options: FaultProxyOptions) {
    this.upstream = parseUpstream(options.upstream);
    this.host = options.listenHost ?? "127.0.0.1";
    this.#maxBufferedBytes = options.maxBufferedBytes ?? 1024 * 1024;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.#random = options.random ?? systemRandom;
    if (!(this.#maxBufferedBytes > 0)) throw new RangeError("maxBufferedBytes must be > 0");
  }

  /** The port clients connect to (fixed for the proxy's life, across refuse/heal). */
  get port(): number {
    return this.#port;
  }

  /** `scheme://host:port` of the proxy, e.g. `proxy.url("redis")`. */
  url(scheme = "tcp"): string {
    return `${scheme}://${this.host}:${this.#port}`;
  }

  /** `url` with its host and port replaced by the proxy's: credentials, path and query stay. */
  rewrite(url: string): string {
    const parsed = new URL(url);
    parsed.hostname = this.host;
    parsed.port = String(this.#port);
    return parsed.toString();
  }

  /** Starts listening (on a free port the first time, on the same port after refuse). */
  async listen(): Promise<void> {
    if (this.#closed) throw labErrors.create("LAB_PROXY_CLOSED");
    if (this.#server) return;
    const server = createServer({ allowHalfOpen: true, noDelay: true }, (client) => this.#accept(client));
    try {
      this.#port = await listen(server, this.#port, this.host);
    } catch (error) {
      throw labErrors.create("LAB_PROXY_PORT_TAKEN", {
        detail: `the fault proxy cannot listen again on ${this.host}:${this.#port}: ${(error as Error).message}`,
        fields: { port: this.#port },
        cause: error,
      });
    }
    this.#server = server;
  }

  /** Delay every chunk by `ms` (+ jitter) in the given direction; 0 removes the delay. */
  setLatency(ms: number, options: LatencyOptions = {}): void {
    if (!(ms >= 0) || !((options.jitterMs ?? 0) >= 0))
      throw new RangeError("latency and jitter must be >= 0 ms");
    const latency = { baseMs: ms, jitterMs: options.jitterMs ?? 0 };
    const direction = options.direction ?? "both";
    if (direction !== "down") this.#up = latency;
    if (direction !== "up") this.#down = latency;
  }

  /**
   * Nothing passes while on. "hold" (default) keeps what was read and delivers it on
   * heal, as TCP retransmission would after a short partition; "discard" throws it
   * away, including what was queued. Links and new connections are still accepted.
   */
  blackhole(on: boolean, mode: "hold" | "discard" = "hold"): void {
    this.#mode = on ? mode : "pass";
    if (this.#mode === "discard")
      for (const link of this.#links) this.#eachPipe(link, (p) => p.discardQueued());
    if (this.#mode === "pass") this.#pumpAll();
  }

  /** While on, the proxy does not listen: new connections get ECONNREFUSED; open links go on. */
  async refuse(on: boolean): Promise<void> {
    this.#refusing = on;
    if (on) this.#stopListening();
    else await this.listen();
  }

  /** Resets every open link (RST both ways, queued bytes lost), as a broken network would. */
  cutAll(): number {
    const count = this.#links.size;
    for (const link of this.#links) {
      for (const socket of [link.client, link.upstream]) if (!socket.destroyed) socket.resetAndDestroy();
      this.#forget(link);
    }
    return count;
  }

  /** Lifts every fault: no latency, no blackhole (held bytes are delivered), listening again. */
  async heal(): Promise<void> {
    this.setLatency(0);
    this.blackhole(false);
    if (this.#refusing) await this.refuse(false);
  }

  /** Counters since start, and what is open and buffered now. */
  stats(): FaultProxyStats {
    const live = { bytesUp: 0, bytesDown: 0, bytesDropped: 0, bytesBuffered: 0, readPauses: 0 };
    for (const { up, down } of this.#links) {
      live.bytesUp += up.counters.forwarded;
      live.bytesDown += down.counters.forwarded;
      live.bytesDropped += up.counters.dropped + down.counters.dropped;
      live.bytesBuffered += up.counters.buffered + down.counters.buffered;
      live.readPauses += up.counters.readPauses + down.counters.readPauses;
    }
    const t = this.#totals;
    return {
      accepted: t.accepted,
      active: this.#links.size,
      bytesUp: t.bytesUp + live.bytesUp,
      bytesDown: t.bytesDown + live.bytesDown,
      bytesDropped: t.bytesDropped + live.bytesDropped,
      bytesBuffered: live.bytesBuffered,
      readPauses: t.readPauses + live.readPauses,
    };
  }

  /** Stops listening and destroys every link. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const link of this.#links) {
      link.client.destroy();
      link.upstream.destroy();
      this.#forget(link);
    }
    const server = this.#server;
    this.#server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  #stopListening(): void {
    // close() stops accepting at once; its callback would wait for open links, which stay.
    this.#server?.close();
    this.#server = undefined;
  }

  #delay(latency: Latency): number {
    return latency.baseMs + (latency.jitterMs > 0 ? this.#random.next() * latency.jitterMs : 0);
  }

  #accept(client: Socket): void {
    this.#totals.accepted++;
    const upstream = connect({ ...this.upstream, allowHalfOpen: true, noDelay: true });
    const pipeOptions = (latency: () => Latency) => ({
      maxBufferedBytes: this.#maxBufferedBytes,
      delayMs: () => this.#delay(latency()),
      mode: () => this.#mode,
    });
    const link: Link = {
      client,
      upstream,
      up: new DelayedPipe(
        client,
        upstream,
        pipeOptions(() => this.#up),
      ),
      down: new DelayedPipe(
        upstream,
        client,
        pipeOptions(() => this.#down),
      ),
    };
    this.#links.add(link);
    upstream.setTimeout(this.#connectTimeoutMs, () =>
      upstream.destroy(new Error("upstream connect timeout")),
    );
    upstream.once("connect", () => upstream.setTimeout(0));
    // A side that fails takes the other down (a proxy must not keep half a link alive);
    // a side that closes cleanly has sent its FIN, which its pipe delivers after the queue.
    const onClose = (other: Socket) => (hadError: boolean) => {
      if (hadError && !other.destroyed) other.resetAndDestroy();
      if (client.destroyed && upstream.destroyed) this.#forget(link);
    };
    client.on("error", () => {}); // reported through close(hadError); nothing else to do
    upstream.on("error", () => {});
    client.once("close", onClose(upstream));
    upstream.once("close", onClose(client));
  }

  #forget(link: Link): void {
    if (!this.#links.delete(link)) return;
    for (const pipe of [link.up, link.down]) {
      this.#totals.readPauses += pipe.counters.readPauses;
      this.#totals.bytesDropped += pipe.counters.dropped + pipe.counters.buffered;
    }
    this.#totals.bytesUp += link.up.counters.forwarded;
    this.#totals.bytesDown += link.down.counters.forwarded;
    this.#eachPipe(link, (p) => p.dispose());
  }

  #eachPipe(link: Link, action: (pipe: DelayedPipe) => void): void {
    action(link.up);
    action(link.down);
  }

  #pumpAll(): void {
    for (const link of this.#links) this.#eachPipe(link, (p) => p.pump());
  }
}

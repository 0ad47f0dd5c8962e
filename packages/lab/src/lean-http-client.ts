/**
 * A lean keep-alive HTTP/1.1 GET client for load generators: requests are bytes formatted
 * once, answers are read up to their status and `Content-Length` and no further (no header
 * objects, no streams, no body decoding). Node's `http.get` costs ~10× wrk's CPU per request
 * (issue 20's read bench: ~0.5 ms against wrk's 0.05 ms), so an open loop sent at 70% of a
 * maximum that wrk measured ate the CPU the server had at that maximum on a 2-core machine;
 * this client sends the same requests for a fraction of that.
 *
 * Answers are framed by `Content-Length` (what Fastify and nginx send for a fixed body) or by
 * chunked encoding (without trailers); any other answer rejects, named. One request per
 * connection at a time, no pipelining; at most `maxSockets` connections, requests beyond wait
 * for a free one in order. Like Node's Agent, an idle connection is not reused once the server
 * may have closed it (its `Keep-Alive: timeout` less a second, 4 s without one, never after
 * `Connection: close`): a request written into a closing socket would fail for the client's sake.
 * Reads land in one buffer per client (`onread`), never a Buffer per read. For a load generator,
 * `request` takes a callback instead of making a promise and `expire` bounds every request
 * handed over before a time in one sweep (no timer or AbortSignal per request).
 *
 * @example
 * const client = new LeanHttpClient({ host: "127.0.0.1", port: 8103, maxSockets: 64 });
 * const request = leanGetRequest("/v1/users/7/feed?limit=20", { authorization: "Bearer fdk_…" });
 * await client.send(request, AbortSignal.timeout(5_000)); // the status, e.g. 200
 * await client.preconnect(16); // a warm pool before a load generator's first request
 * client.request(request, (status, error) => record(status, error)); // status -1 with the error
 * client.expire(performance.now() - 5_000, new Error("timed out")); // every 100 ms, say
 * client.close();
 */
import { connect, type Socket } from "node:net";
import { Deque } from "@casebook/kit/deque";

/** A GET formatted once: send it as often as you like. */
export function leanGetRequest(path: string, headers: Readonly<Record<string, string>> = {}): Buffer {
  // A Host among `headers` replaces the default one (a server may route by it; two would be refused).
  const ownHost = Object.keys(headers).some((name) => name.toLowerCase() === "host");
  const lines = [`GET ${path} HTTP/1.1`, ...(ownHost ? [] : ["host: localhost"]), "connection: keep-alive"];
  for (const [name, value] of Object.entries(headers)) {
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value))
      throw new RangeError(`header ${name} holds a line break`);
    lines.push(`${name}: ${value}`);
  }
  return Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1");
}

const HEADER_END = Buffer.from("\r\n\r\n", "latin1");
const CRLF = Buffer.from("\r\n", "latin1");
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;
const CHUNKED = /\r\ntransfer-encoding:\s*chunked/i;
const KEEP_ALIVE_TIMEOUT = /\r\nkeep-alive:[^\r]*timeout=(\d+)/i;
const CONNECTION_CLOSE = /\r\nconnection:\s*close/i;
/** An idle connection is not reused past the server's `Keep-Alive: timeout` less this margin. */
const IDLE_MARGIN_MS = 1_000;
/** Without a hint: below Node's default server keepAliveTimeout (5 s). */
const DEFAULT_IDLE_MS = 4_000;
const NOT_FRAMED = -1;

/**
 * Where the answer whose body starts at `bodyStart` ends: by its Content-Length, or by walking
 * its chunks to the last (no trailers); Infinity while more bytes are needed, NOT_FRAMED if neither.
 */
function answerEnd(head: string, data: Buffer, bodyStart: number): number {
  const length = CONTENT_LENGTH.exec(head);
  if (length !== null) return bodyStart + Number(length[1]);
  if (!CHUNKED.test(head)) return NOT_FRAMED;
  let at = bodyStart;
  for (;;) {
    const lineEnd = data.indexOf(CRLF, at);
    if (lineEnd < 0) return Number.POSITIVE_INFINITY;
    const size = Number.parseInt(data.toString("latin1", at, lineEnd), 16);
    if (Number.isNaN(size)) return NOT_FRAMED;
    const next = lineEnd + CRLF.length + size + CRLF.length;
    if (size === 0) return next;
    at = next;
  }
}

/** Told once how a request ended: its status, or the error (then `status` is -1). */
export type LeanDone = (status: number, error?: unknown) => void;

interface Waiter {
  readonly request: Buffer;
  readonly signal: AbortSignal | undefined;
  readonly done: LeanDone;
  /** performance.now() when it was handed to the client (`expire` counts from it). */
  readonly atMs: number;
}

/** Reads land here (`onread`): one buffer per client, never a Buffer per read; answers are parsed in place. */
const READ_BUFFER_BYTES = 64 * 1024;

/** One keep-alive connection: one request in flight at a time. */
class Connection {
  readonly socket: Socket;
  /** An answer's first bytes while the rest is awaited (a copy: the read buffer is reused). */
  #pending: Buffer | undefined;
  #current: Waiter | undefined;
  #onDone: (conn: Connection) => void;
  #dead = false;
  /** Past this (performance.now()) the server may have closed it: not reused. */
  #reusableUntilMs = 0;

  constructor(host: string, port: number, readBuffer: Buffer, onDone: (conn: Connection) => void) {
    this.#onDone = onDone;
    this.socket = connect({
      host,
      port,
      noDelay: true,
      onread: {
        buffer: readBuffer,
        callback: (bytes: number) => {
          this.#read(readBuffer, bytes);
          return true;
        },
      },
    });
    const die = (error: unknown) => this.#die(error);
    this.socket.on("error", die);
    this.socket.on("close", () => die(new Error("connection closed by the server")));
  }

  /** Resolves once connected and idle (reusable for DEFAULT_IDLE_MS, as no server said otherwise), or dead. */
  ready(): Promise<void> {
    return new Promise((resolve) => {
      const settle = () => {
        this.socket.off("connect", settle);
        this.socket.off("close", settle);
        if (!this.#dead) this.#reusableUntilMs = performance.now() + DEFAULT_IDLE_MS;
        resolve();
      };
      this.socket.once("connect", settle);
      this.socket.once("close", settle);
    });
  }

  get dead(): boolean {
    return this.#dead;
  }

  /** When the request in flight was handed to the client, or undefined when idle. */
  get busySinceMs(): number | undefined {
    return this.#current?.atMs;
  }

  /** Idle too long to trust (the server closes idle connections): closed instead of reused. */
  retireIfStale(nowMs: number): boolean {
    if (nowMs < this.#reusableUntilMs) return false;
    this.#dead = true;
    this.socket.destroy();
    return true;
  }

  send(waiter: Waiter): void {
    this.#current = waiter;
    if (waiter.signal?.aborted) {
      this.#die(waiter.signal.reason);
      return;
    }
    waiter.signal?.addEventListener("abort", this.#abort, { once: true });
    this.socket.write(waiter.request);
  }

  readonly #abort = () => this.#die(this.#current?.signal?.reason ?? new Error("aborted"));

  /** `bytes` new bytes at the start of the shared read buffer (valid until this returns). */
  #read(buffer: Buffer, bytes: number): void {
    if (this.#dead) return;
    const data =
      this.#pending === undefined
        ? buffer.subarray(0, bytes)
        : Buffer.concat([this.#pending, buffer.subarray(0, bytes)]);
    const end = data.indexOf(HEADER_END);
    const head = end < 0 ? "" : data.toString("latin1", 0, end);
    const total = end < 0 ? Number.POSITIVE_INFINITY : answerEnd(head, data, end + HEADER_END.length);
    if (total === NOT_FRAMED) {
      this.#die(
        new Error(`an answer with neither Content-Length nor chunked encoding: ${head.slice(0, 80)}`),
      );
      return;
    }
    if (data.length < total) {
      this.#pending = Buffer.from(data);
      return;
    }
    if (data.length > total || this.#current === undefined) {
      this.#die(new Error("bytes past the answer (pipelining is not supported)"));
      return;
    }
    this.#pending = undefined;
    const hint = KEEP_ALIVE_TIMEOUT.exec(head);
    this.#reusableUntilMs = CONNECTION_CLOSE.test(head)
      ? 0
      : performance.now() + (hint === null ? DEFAULT_IDLE_MS : Number(hint[1]) * 1_000 - IDLE_MARGIN_MS);
    const waiter = this.#current;
    this.#current = undefined;
    waiter.signal?.removeEventListener("abort", this.#abort);
    // "HTTP/1.1 200": the status's three digits, read as bytes.
    waiter.done((data[9]! - 48) * 100 + (data[10]! - 48) * 10 + (data[11]! - 48));
    this.#onDone(this);
  }

  #die(error: unknown): void {
    if (this.#dead) return;
    this.#dead = true;
    this.socket.destroy();
    const waiter = this.#current;
    this.#current = undefined;
    if (waiter) {
      waiter.signal?.removeEventListener("abort", this.#abort);
      waiter.done(-1, error);
    }
    this.#onDone(this);
  }

  /** Fails the request in flight with `error` (the connection goes with it). */
  fail(error: unknown): void {
    this.#die(error);
  }
}

export interface LeanHttpClientOptions {
  readonly host: string;
  readonly port: number;
  /** Connections at most; requests beyond wait for a free one. */
  readonly maxSockets: number;
}

export class LeanHttpClient {
  readonly #o: LeanHttpClientOptions;
  readonly #idle: Connection[] = [];
  readonly #all = new Set<Connection>();
  readonly #waiting = new Deque<Waiter>();
  readonly #readBuffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  #opened = 0;

  constructor(options: LeanHttpClientOptions) {
    this.#o = options;
  }

  /** Sends `request` (from `leanGetRequest`); resolves the answer's status. */
  send(request: Buffer, signal?: AbortSignal): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#dispatch({
        request,
        signal,
        done: (status, error) => (status < 0 ? reject(error) : resolve(status)),
        atMs: performance.now(),
      });
    });
  }

  /**
   * `send` without a promise or a signal, for load generators: `done` is told the status, or
   * the error (status -1). A request is bounded by `expire`, not by a timer of its own.
   */
  request(request: Buffer, done: LeanDone): void {
    this.#dispatch({ request, signal: undefined, done, atMs: performance.now() });
  }

  /**
   * Fails with `error` every request handed to the client before `beforeMs` (performance.now())
   * and not answered yet, waiting or in flight (its connection closed): one sweep bounds them all.
   */
  expire(beforeMs: number, error: unknown): void {
    for (let w = this.#waiting.peek(); w !== undefined && w.atMs < beforeMs; w = this.#waiting.peek()) {
      this.#waiting.shift();
      w.done(-1, error);
    }
    for (const conn of [...this.#all]) {
      const since = conn.busySinceMs;
      if (since !== undefined && since < beforeMs) conn.fail(error);
    }
  }

  /**
   * Opens up to `count` connections (within `maxSockets`) and resolves when each is connected or
   * has failed; they wait idle for the first requests. A load generator's run then starts with a
   * warm pool, as a real client's or balancer's would be, instead of a connection per request
   * until the first answers come back (hundreds of connects within the first 0.1 s against a
   * Node server at ~6,000 requests/s, issue 20).
   */
  async preconnect(count: number): Promise<void> {
    const opening: Promise<void>[] = [];
    for (let i = 0; i < count && this.#all.size < this.#o.maxSockets; i++) {
      const conn = this.#open();
      opening.push(conn.ready());
      this.#idle.push(conn);
    }
    // One that failed has left the pool already (its death releases it).
    await Promise.all(opening);
  }

  /** Connections opened since the client was made (pre-opened ones included). */
  get opened(): number {
    return this.#opened;
  }

  /** Closes every connection; requests in flight or waiting reject. */
  close(): void {
    for (let w = this.#waiting.shift(); w !== undefined; w = this.#waiting.shift())
      w.done(-1, new Error("client closed"));
    for (const conn of this.#all) conn.socket.destroy();
    this.#all.clear();
    this.#idle.length = 0;
  }

  #dispatch(waiter: Waiter): void {
    const idle = this.#freshIdle();
    if (idle) idle.send(waiter);
    else if (this.#all.size < this.#o.maxSockets) this.#open().send(waiter);
    else this.#waiting.push(waiter);
  }

  /** The most recently used idle connection that may still be reused; stale ones are closed. */
  #freshIdle(): Connection | undefined {
    const nowMs = performance.now();
    for (let conn = this.#idle.pop(); conn !== undefined; conn = this.#idle.pop()) {
      if (!conn.retireIfStale(nowMs)) return conn;
      this.#all.delete(conn);
    }
    return undefined;
  }

  #open(): Connection {
    this.#opened++;
    const conn = new Connection(this.#o.host, this.#o.port, this.#readBuffer, (done) => this.#release(done));
    this.#all.add(conn);
    return conn;
  }

  #release(conn: Connection): void {
    // Dead, or answered `Connection: close` (or past its keep-alive) and so about to be closed by
    // the server: it leaves the pool, and a request waiting for it gets a new connection — never
    // this one, whose close would fail it (nginx closes after keepalive_requests answers).
    const gone = conn.dead || conn.retireIfStale(performance.now());
    if (gone) {
      this.#all.delete(conn);
      const i = this.#idle.indexOf(conn);
      if (i >= 0) this.#idle.splice(i, 1);
    }
    const next = this.#nextWaiter();
    if (next === undefined) {
      if (!gone) this.#idle.push(conn);
      return;
    }
    (gone ? this.#open() : conn).send(next);
  }

  #nextWaiter(): Waiter | undefined {
    for (let waiter = this.#waiting.shift(); waiter !== undefined; waiter = this.#waiting.shift()) {
      if (!waiter.signal?.aborted) return waiter;
      waiter.done(-1, waiter.signal.reason);
    }
    return undefined;
  }
}

/**
 * One TCP connection to one cache node, with auto-pipelining: every command issued during
 * one turn of the event loop is queued, and the whole queue leaves in ONE socket write
 * when the turn ends (setImmediate). A thousand concurrent GETs from a thousand callers
 * cost one write and, usually, one read, instead of a thousand round trips; callers still
 * see one promise each. Replies come back in order, so they are matched to a FIFO of
 * waiting callers.
 *
 * Failure handling is deliberately blunt, because half-measures desynchronise the FIFO:
 * - the oldest waiting command has had no reply within `commandTimeoutMs` → the link is
 *   presumed dead (a reply that late would belong to a caller who gave up): every
 *   pending command fails with CACHE_CLIENT_TIMEOUT and the socket is destroyed;
 * - the socket closes with commands in flight → they fail with CACHE_CLIENT_CONNECTION_LOST
 *   (they may have run: only the caller knows whether a retry is safe);
 * - more than `maxPending` commands waiting → the new one fails at once (backpressure,
 *   CACHE_CLIENT_BACKPRESSURE) rather than queueing without bound.
 * A closed connection stays closed; the pool replaces it.
 *
 * Error replies (`-MOVED …`, `-ERR …`) are replies, not failures: `send` resolves with an
 * `ErrorReply` and the router or the typed command decides what it means.
 *
 * @example
 * const connection = new NodeConnection({ host: "127.0.0.1", port: 7000 });
 * const [a, b] = await Promise.all([connection.send(["GET", "a"]), connection.send(["GET", "b"])]); // one write
 * await connection.close();
 */

import { createConnection, type Socket } from "node:net";
import { Deque } from "@casebook/kit/deque";
import type { CasebookError } from "@casebook/kit/errors";
import { clientErrors, requireClientInteger } from "./client-errors.ts";
import { encodeCommand, type WireEncoding } from "./command-encoder.ts";
import { NEED_MORE, type Reply, type ReplyLimits, ReplyParser } from "./reply-parser.ts";

export interface NodeConnectionOptions {
  readonly host: string;
  readonly port: number;
  /** Bound on opening the TCP connection. */
  readonly connectTimeoutMs?: number;
  /** Bound on waiting for the oldest command's reply; past it the link is declared dead. */
  readonly commandTimeoutMs?: number;
  /** Commands waiting for replies on this connection, at most. */
  readonly maxPending?: number;
  /** A batch is written as soon as it reaches this many bytes, without waiting for the turn to end. */
  readonly maxBatchBytes?: number;
  readonly encoding?: WireEncoding;
  /** Keep `+OK` apart from `$2 OK` (a proxy relays the exact reply type). */
  readonly tagStatus?: boolean;
  readonly limits?: ReplyLimits;
}

export const connectionDefaults = Object.freeze({
  connectTimeoutMs: 1_000,
  commandTimeoutMs: 1_000,
  maxPending: 10_000,
  maxBatchBytes: 1024 * 1024,
});

export type ConnectionState = "connecting" | "ready" | "closed";

interface Pending {
  readonly resolve: (reply: Reply) => void;
  readonly reject: (error: Error) => void;
  readonly deadlineMs: number;
}

export interface ConnectionStats {
  /** socket.write calls: with auto-pipelining, far fewer than commands. */
  readonly writes: number;
  readonly commands: number;
  readonly replies: number;
}

export class NodeConnection {
  readonly address: string;
  readonly #options: Required<Omit<NodeConnectionOptions, "limits">> & { limits?: ReplyLimits };
  readonly #socket: Socket;
  readonly #parser: ReplyParser;
  #state: ConnectionState = "connecting";
  #closing = false;
  /** Commands awaiting their reply, oldest first: replies arrive in command order. */
  readonly #pending = new Deque<Pending>();
  #outbox: string[] = [];
  #outboxBytes = 0;
  #flush: NodeJS.Immediate | undefined;
  #timer: NodeJS.Timeout | undefined;
  #connectTimer: NodeJS.Timeout | undefined;
  #socketError: Error | undefined;
  #failure: CasebookError | undefined;
  readonly #closed: Promise<void>;
  #stats = { writes: 0, commands: 0, replies: 0 };

  constructor(options: NodeConnectionOptions) {
    this.#options = { ...connectionDefaults, encoding: "utf8", tagStatus: false, ...options };
    const o = this.#options;
    requireClientInteger("connectTimeoutMs", o.connectTimeoutMs, 1, 600_000);
    requireClientInteger("commandTimeoutMs", o.commandTimeoutMs, 1, 600_000);
    requireClientInteger("maxPending", o.maxPending, 1, 10_000_000);
    requireClientInteger("maxBatchBytes", o.maxBatchBytes, 1, 512 * 1024 * 1024);
    this.address = `${o.host}:${o.port}`;
    this.#parser = new ReplyParser({ encoding: o.encoding, tagStatus: o.tagStatus, limits: o.limits });
    this.#socket = createConnection({ host: o.host, port: o.port, noDelay: true, keepAlive: true });
    this.#closed = new Promise((resolve) => this.#socket.once("close", () => resolve()));
    this.#connectTimer = setTimeout(() => this.#fail(this.#timeout("connect")), o.connectTimeoutMs);
    this.#socket.once("connect", () => {
      clearTimeout(this.#connectTimer);
      if (this.#state === "connecting") this.#state = "ready";
    });
    this.#socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    this.#socket.on("error", (error) => {
      this.#socketError = error;
    });
    this.#socket.once("close", () => this.#fail(this.#lostError()));
  }

  get state(): ConnectionState {
    return this.#state;
  }

  /** True while the connection accepts commands. */
  get usable(): boolean {
    return this.#state !== "closed" && !this.#closing;
  }

  /** Commands sent (or queued) and not yet answered. */
  get pending(): number {
    return this.#pending.length;
  }

  get stats(): ConnectionStats {
    return { ...this.#stats };
  }

  /** Sends one command; resolves with its reply (an ErrorReply too), rejects when the link fails. */
  send(args: readonly string[]): Promise<Reply> {
    if (!this.usable) {
      const closed = clientErrors.create("CACHE_CLIENT_CLOSED", { fields: { address: this.address } });
      return Promise.reject(this.#closing ? closed : (this.#failure ?? closed));
    }
    if (this.pending >= this.#options.maxPending) {
      return Promise.reject(
        clientErrors.create("CACHE_CLIENT_BACKPRESSURE", {
          fields: { address: this.address, maxPending: this.#options.maxPending },
        }),
      );
    }
    return new Promise<Reply>((resolve, reject) => {
      this.#pending.push({ resolve, reject, deadlineMs: performance.now() + this.#options.commandTimeoutMs });
      this.#enqueue(args);
      this.#armTimer();
    });
  }

  /** Stops taking commands, waits for the pending replies (bounded by the command timeout), then closes. */
  async close(): Promise<void> {
    if (this.#state === "closed") return this.#closed;
    this.#closing = true;
    this.#writeOutbox();
    if (this.pending === 0) this.#socket.end();
    return this.#closed;
  }

  /** Closes at once: every pending command fails with `error` (CACHE_CLIENT_CLOSED by default). */
  destroy(error?: CasebookError): Promise<void> {
    this.#fail(error ?? clientErrors.create("CACHE_CLIENT_CLOSED", { fields: { address: this.address } }));
    return this.#closed;
  }

  #enqueue(args: readonly string[]): void {
    const text = encodeCommand(args, this.#options.encoding);
    this.#outbox.push(text);
    // Counted in chars: bytes for latin1 and ASCII, a slight undercount for other UTF-8 text.
    this.#outboxBytes += text.length;
    this.#stats.commands += 1;
    if (this.#outboxBytes >= this.#options.maxBatchBytes) {
      this.#writeOutbox();
      return;
    }
    this.#flush ??= setImmediate(() => {
      this.#flush = undefined;
      this.#writeOutbox();
    });
  }

  #writeOutbox(): void {
    if (this.#flush !== undefined) {
      clearImmediate(this.#flush);
      this.#flush = undefined;
    }
    if (this.#outbox.length === 0 || this.#state === "closed") return;
    const batch = this.#outbox.length === 1 ? this.#outbox[0]! : this.#outbox.join("");
    this.#outbox = [];
    this.#outboxBytes = 0;
    this.#stats.writes += 1;
    this.#socket.write(batch, this.#options.encoding);
  }

  #onData(chunk: Buffer): void {
    try {
      this.#parser.feed(chunk);
      for (let reply = this.#parser.next(); reply !== NEED_MORE; reply = this.#parser.next()) {
        const waiting = this.#pending.shift();
        if (waiting === undefined) {
          throw clientErrors.create("CACHE_CLIENT_PROTOCOL_INVALID", {
            detail: "Protocol error: a reply arrived with no command waiting for it",
            fields: { address: this.address },
          });
        }
        this.#stats.replies += 1;
        waiting.resolve(reply);
      }
    } catch (error) {
      this.#fail(error as CasebookError);
      return;
    }
    if (this.#closing && this.pending === 0) this.#socket.end();
  }

  /** One timer per connection, set for the oldest command: deadlines are in FIFO order. */
  #armTimer(): void {
    if (this.#timer !== undefined || this.pending === 0) return;
    const waitMs = Math.max(0, this.#pending.peek()!.deadlineMs - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const oldest = this.#pending.peek();
      if (oldest !== undefined && oldest.deadlineMs <= performance.now()) {
        this.#fail(this.#timeout("reply"));
        return;
      }
      this.#armTimer();
    }, waitMs + 1);
  }

  #timeout(phase: "connect" | "reply"): CasebookError {
    const timeoutMs = phase === "connect" ? this.#options.connectTimeoutMs : this.#options.commandTimeoutMs;
    return clientErrors.create("CACHE_CLIENT_TIMEOUT", {
      fields: { address: this.address, phase, timeoutMs },
    });
  }

  #lostError(): CasebookError {
    const code =
      this.#state === "connecting" ? "CACHE_CLIENT_CONNECT_FAILED" : "CACHE_CLIENT_CONNECTION_LOST";
    return clientErrors.create(code, {
      fields: { address: this.address },
      ...(this.#socketError ? { cause: this.#socketError } : {}),
    });
  }

  /** Final: every pending command fails with `error`, the socket is destroyed, timers stop. */
  #fail(error: CasebookError): void {
    if (this.#state === "closed") return;
    this.#state = "closed";
    this.#failure = error;
    clearTimeout(this.#connectTimer);
    clearTimeout(this.#timer);
    if (this.#flush !== undefined) clearImmediate(this.#flush);
    this.#outbox = [];
    const waiting = this.#pending.drain();
    this.#socket.destroy();
    for (const entry of waiting) entry.reject(error);
  }
}

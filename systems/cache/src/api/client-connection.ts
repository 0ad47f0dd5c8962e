/**
 * One client connection of the cache server: its parser, its state (name, protocol,
 * id), and the read → run → write loop. Each socket read runs every complete command
 * it carries and sends all their replies in one write (pipelining). Backpressure: once
 * the unsent replies pass `maxPendingOutputBytes`, or one batch's replies pass
 * `maxBatchOutputBytes`, the connection stops reading until its socket drains, so a
 * client that never reads cannot make the node buffer without limit.
 *
 * A blocking command (WAIT) leaves a `BlockedReply` instead of replying: the batch's
 * earlier replies go out, reading pauses, and the commands already buffered behind it
 * run only once its reply is written, so a pipelining client gets replies in order.
 *
 * @example
 * // created by CacheServer for every accepted socket:
 * const connection = new Connection(socket, clientId, shared);
 * await connection.end(); // flush what is owed, then close
 */
import type { Socket } from "node:net";
import type { Keyspace } from "../domain/keyspace.ts";
import { cacheErrors } from "../errors.ts";
import type {
  BlockedReply,
  ClientState,
  CommandContext,
  CommandSpec,
  NodeContext,
} from "./commands/command-spec.ts";
import { dispatch } from "./commands/command-table.ts";
import { type RespLimits, RespParser } from "./resp-parser.ts";
import type { ReplyWriter } from "./resp-writer.ts";

/** What the server logs; pino's logger fits. */
export interface ServerLog {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/** Node-wide counters INFO and /metrics report. */
export interface Counters {
  totalConnections: number;
  rejectedConnections: number;
  totalCommands: number;
  usedMemoryPeakBytes: number;
}

/** What every connection shares with the server. */
export interface SharedState {
  readonly keyspace: Keyspace;
  readonly writer: ReplyWriter;
  readonly table: ReadonlyMap<string, CommandSpec>;
  readonly node: NodeContext;
  readonly counters: Counters;
  readonly limits: RespLimits;
  readonly maxPendingOutputBytes: number;
  readonly maxBatchOutputBytes: number;
  readonly log: ServerLog;
}

/** Longest first argument kept for CLIENT LIST's `cmd=` (a subcommand's name); a key or value longer is not. */
const MAX_SHOWN_ARGUMENT = 32;

export class Connection {
  readonly #socket: Socket;
  readonly #parser: RespParser;
  readonly #client: ClientState;
  readonly #ctx: CommandContext;
  readonly #shared: SharedState;
  #waitingForDrain = false;
  #ending = false;
  /** The blocking command this client waits on; its later commands stay in the parser meanwhile. */
  #blocked: BlockedReply | undefined;
  readonly #closed: Promise<void>;

  constructor(socket: Socket, id: number, shared: SharedState) {
    this.#socket = socket;
    this.#shared = shared;
    this.#parser = new RespParser(this.#shared.limits);
    const openedAtMs = shared.node.clock.monotonicMs();
    this.#client = {
      id,
      name: "",
      protocol: 2,
      libName: "",
      libVersion: "",
      closeAfterReply: false,
      blocked: undefined,
      user: shared.node.acl.default,
      // As Redis's clientSetDefaultAuth: a connection opened while default is nopass stays authenticated.
      authenticated: shared.node.acl.defaultOpen,
      addr: `${socket.remoteAddress}:${socket.remotePort}`,
      laddr: `${socket.localAddress}:${socket.localPort}`,
      openedAtMs,
      lastActiveAtMs: openedAtMs,
      lastCommand: "NULL",
      lastArgument: "",
      buffers: () => ({ queryBytes: this.#parser.bufferedBytes, outputBytes: socket.writableLength }),
    };
    this.#ctx = {
      keyspace: this.#shared.keyspace,
      reply: this.#shared.writer,
      client: this.#client,
      node: this.#shared.node,
    };
    this.#closed = new Promise((resolve) =>
      socket.once("close", () => {
        // A client that left stops waiting: its WAIT must not hold a slot in the replication source.
        (this.#blocked ?? this.#client.blocked)?.cancel();
        resolve();
      }),
    );
    socket.on("data", (chunk: Buffer) => this.#onData(chunk));
    socket.on("drain", () => this.#onDrain());
    // A reset or a broken pipe ends this client only; the node carries on.
    socket.on("error", () => socket.destroy());
  }

  /** This connection's state, as CLIENT LIST shows it. */
  get client(): ClientState {
    return this.#client;
  }

  get pendingOutputBytes(): number {
    return this.#socket.writableLength;
  }

  get waitingForDrain(): boolean {
    return this.#waitingForDrain;
  }

  /** True while a blocking command (WAIT) holds this client. */
  get blocked(): boolean {
    return this.#blocked !== undefined;
  }

  /** Graceful end: no more reading, replies already owed are flushed, then FIN. */
  end(): Promise<void> {
    if (!this.#ending) {
      this.#ending = true;
      // Keep reading (and discarding, see #onData): a paused socket would never see the peer's FIN.
      this.#socket.resume();
      this.#socket.end();
    }
    return this.#closed;
  }

  destroy(): void {
    this.#socket.destroy();
  }

  #onData(chunk: Buffer): void {
    if (this.#ending) return;
    try {
      this.#parser.feed(chunk);
    } catch (error) {
      const { writer } = this.#shared;
      writer.begin(this.#client.protocol);
      if (cacheErrors.is(error)) writer.error(`ERR ${error.message}`);
      this.#write(writer.finish());
      this.#fail(error);
      return;
    }
    // Commands arriving behind a blocked one wait in the parser; #unblock runs them.
    if (this.#blocked === undefined) this.#run();
  }

  #onDrain(): void {
    if (!this.#waitingForDrain || this.#ending || this.#blocked !== undefined) return;
    this.#waitingForDrain = false;
    this.#socket.resume();
    this.#run();
  }

  /** Runs the complete commands buffered, writes their replies at once, and applies backpressure. */
  #run(): void {
    const { writer, table, counters, maxBatchOutputBytes } = this.#shared;
    this.#client.lastActiveAtMs = this.#shared.node.clock.monotonicMs();
    writer.begin(this.#client.protocol);
    let failure: unknown;
    let more = false;
    try {
      for (;;) {
        if (writer.batchBytes >= maxBatchOutputBytes) {
          more = !this.#parser.idle;
          break;
        }
        const args = this.#parser.next();
        if (args === undefined) break;
        counters.totalCommands += 1;
        this.#client.lastCommand = args[0]!;
        this.#client.lastArgument = args.length > 1 && args[1]!.length <= MAX_SHOWN_ARGUMENT ? args[1]! : "";
        dispatch(table, this.#ctx, args);
        if (this.#client.closeAfterReply || this.#client.blocked !== undefined) break;
      }
    } catch (error) {
      failure = error;
      if (cacheErrors.is(error)) writer.error(`ERR ${error.message}`);
    }
    this.#write(writer.finish());
    if (failure !== undefined) {
      this.#fail(failure);
      return;
    }
    if (this.#client.closeAfterReply) {
      void this.end();
      return;
    }
    const blocked = this.#client.blocked;
    if (blocked !== undefined) {
      this.#block(blocked);
      return;
    }
    if (more || this.#socket.writableLength > this.#shared.maxPendingOutputBytes) {
      // Backpressure: read nothing more from this client until it has taken its replies.
      this.#waitingForDrain = true;
      this.#socket.pause();
      // No 'drain' will come if the socket never filled up (a batch stopped early): yield to I/O, then go on.
      if (!this.#socket.writableNeedDrain) setImmediate(() => this.#onDrain());
    }
  }

  #block(blocked: BlockedReply): void {
    this.#client.blocked = undefined;
    this.#blocked = blocked;
    this.#socket.pause();
    blocked.settled.then(
      (writeReply) => this.#unblock(blocked, writeReply),
      (error: unknown) => this.#fail(error),
    );
  }

  /** Writes the blocked command's reply, then runs what the client pipelined behind it. */
  #unblock(blocked: BlockedReply, writeReply: (reply: ReplyWriter) => void): void {
    if (this.#blocked !== blocked) return;
    this.#blocked = undefined;
    if (this.#ending || this.#socket.destroyed) return;
    const { writer } = this.#shared;
    writer.begin(this.#client.protocol);
    writeReply(writer);
    this.#write(writer.finish());
    this.#socket.resume();
    this.#run();
  }

  #write(parts: readonly Buffer[]): void {
    if (parts.length === 0 || this.#socket.destroyed) return;
    if (parts.length === 1) {
      this.#socket.write(parts[0]!);
      return;
    }
    this.#socket.cork();
    for (const part of parts) this.#socket.write(part);
    this.#socket.uncork();
  }

  /** A protocol error (already answered, as Redis does) ends the connection; anything else is a bug: logged too. */
  #fail(error: unknown): void {
    if (!cacheErrors.is(error)) {
      this.#shared.log.error(
        { err: error, client: this.#client.id },
        "cache command failed: closing the connection",
      );
    }
    void this.end();
  }
}

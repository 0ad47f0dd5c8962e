/**
 * The cache node's TCP server: RESP over node:net, so redis-cli, redis-benchmark and
 * ioredis talk to it unmodified. One event loop runs every command to completion, so
 * each command is atomic (CA-01's INCRBY) without locks — Redis's own model.
 *
 * Per socket read: parse every complete command in the chunk, run them in order, and
 * send all their replies with one write (pipelining). Bounds, each named below:
 * a connection's unparsed input (RespLimits), the reply bytes one batch may produce
 * before it yields, the unsent output above which the server stops reading from that
 * client (backpressure: a client that never reads cannot make the node buffer without
 * limit), and the number of clients.
 *
 * @example
 * const server = new CacheServer({ keyspace, clock: systemClock, port: 7000 });
 * const { port } = await server.listen();
 * // redis-cli -p 7000 SET k v EX 60
 * await server.close(); // stop accepting, flush what is owed, close every connection
 */
import { createServer, type Server, type Socket } from "node:net";
import type { Clock } from "@casebook/kit/clock";
import { AclUsers } from "../domain/acl-users.ts";
import type { Keyspace } from "../domain/keyspace.ts";
import { REPLY_ERRORS } from "../domain/reply-errors.ts";
import type { ReplicationSource } from "../replication/workers/replication-primary.ts";
import { Connection, type Counters, type ServerLog, type SharedState } from "./client-connection.ts";
import { allCommands } from "./commands/all-commands.ts";
import type { CommandSpec, NodeContext, NodeStats } from "./commands/command-spec.ts";
import { createCommandTable, type DispatchHooks } from "./commands/command-table.ts";
import { createConfigParams, type NodeSettings } from "./commands/config-params.ts";
import { globMatch } from "./commands/glob-match.ts";
import { defaultRespLimits, type RespLimits } from "./resp-parser.ts";
import { ReplyWriter } from "./resp-writer.ts";

export type { ServerLog } from "./client-connection.ts";

export interface CacheServerOptions {
  readonly keyspace: Keyspace;
  readonly clock: Clock;
  /** 0 = any free port (tests). Default 7000. */
  readonly port?: number;
  /** Default 127.0.0.1: listening on every interface is a decision (0.0.0.0). */
  readonly host?: string;
  /** Redis's maxclients default. */
  readonly maxClients?: number;
  readonly limits?: RespLimits;
  /** Stop reading from a client while this many reply bytes wait in its socket. */
  readonly maxPendingOutputBytes?: number;
  /** A batch stops running commands once its replies reach this; the rest wait for the socket to drain. */
  readonly maxBatchOutputBytes?: number;
  /** Connections still open this long after close() are destroyed. */
  readonly closeTimeoutMs?: number;
  readonly hz?: number;
  readonly log?: ServerLog;
  /** Extra commands (part 2: CLUSTER, READONLY, ASKING). */
  readonly extraCommands?: readonly CommandSpec[];
  /** Run around every command (part 2: cluster routing before, replication after). */
  readonly hooks?: DispatchHooks;
  /** A cluster node's stream to its replicas (WAIT, INFO replication, ROLE). */
  readonly replication?: ReplicationSource;
  /** The default user's password (Redis's requirepass); unset or "" = no password. */
  readonly requirepass?: string;
}

export const cacheServerDefaults = Object.freeze({
  port: 7000,
  host: "127.0.0.1",
  maxClients: 10_000,
  maxPendingOutputBytes: 8 * 1024 * 1024,
  maxBatchOutputBytes: 4 * 1024 * 1024,
  closeTimeoutMs: 5_000,
  hz: 10,
});

const silentLog: ServerLog = { warn: () => {}, error: () => {} };

export class CacheServer {
  readonly keyspace: Keyspace;
  readonly #options: CacheServerOptions;
  readonly #settings: NodeSettings;
  readonly #server: Server;
  readonly #connections = new Set<Connection>();
  readonly #writer = new ReplyWriter();
  readonly #table: Map<string, CommandSpec>;
  readonly #node: NodeContext;
  readonly #log: ServerLog;
  readonly #counters: Counters = {
    totalConnections: 0,
    rejectedConnections: 0,
    totalCommands: 0,
    usedMemoryPeakBytes: 0,
  };
  #nextClientId = 1;
  #port = 0;
  #startedAtMs = 0;
  #closed: Promise<void> | undefined;

  constructor(options: CacheServerOptions) {
    this.#options = options;
    this.keyspace = options.keyspace;
    this.#log = options.log ?? silentLog;
    this.#settings = {
      maxClients: options.maxClients ?? cacheServerDefaults.maxClients,
      port: options.port ?? cacheServerDefaults.port,
      host: options.host ?? cacheServerDefaults.host,
      hz: options.hz ?? cacheServerDefaults.hz,
      limits: options.limits ?? defaultRespLimits,
    };
    this.#table = createCommandTable([...allCommands, ...(options.extraCommands ?? [])], options.hooks);
    const acl = new AclUsers([...new Set(this.#table.values())], (pattern, key) => globMatch(pattern, key));
    if (options.requirepass !== undefined && options.requirepass !== "") {
      acl.setUser("default", ["resetpass", `>${options.requirepass}`]);
    }
    const config = createConfigParams(this.keyspace, this.#settings, acl);
    this.#node = {
      clock: options.clock,
      config,
      acl,
      commands: this.#table,
      replication: options.replication,
      clients: () => [...this.#connections].map((connection) => connection.client),
      stats: () => this.stats(),
      resetStats: () => {
        this.#counters.totalConnections = 0;
        this.#counters.rejectedConnections = 0;
        this.#counters.totalCommands = 0;
      },
    };
    this.#server = createServer({ noDelay: true, keepAlive: true }, (socket) => this.#accept(socket));
  }

  /** The node's users (AUTH, ACL, requirepass). */
  get acl(): AclUsers {
    return this.#node.acl;
  }

  /** The port actually bound (after listen). */
  get port(): number {
    return this.#port;
  }

  get connectionCount(): number {
    return this.#connections.size;
  }

  /** Reply bytes waiting in sockets, and connections not read from until they drain (backpressure). */
  outputStats(): { pendingOutputBytes: number; pausedConnections: number } {
    let pendingOutputBytes = 0;
    let pausedConnections = 0;
    for (const connection of this.#connections) {
      pendingOutputBytes += connection.pendingOutputBytes;
      if (connection.waitingForDrain) pausedConnections += 1;
    }
    return { pendingOutputBytes, pausedConnections };
  }

  /** Node-wide numbers, with the process's memory. */
  stats(): NodeStats {
    const memory = process.memoryUsage();
    this.sampleMemoryPeak();
    return {
      startedAtMs: this.#startedAtMs,
      port: this.#port,
      connectedClients: this.#connections.size,
      maxClients: this.#settings.maxClients,
      totalConnections: this.#counters.totalConnections,
      rejectedConnections: this.#counters.rejectedConnections,
      totalCommands: this.#counters.totalCommands,
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      heapTotalBytes: memory.heapTotal,
      externalBytes: memory.external,
      arrayBuffersBytes: memory.arrayBuffers,
      usedMemoryPeakBytes: this.#counters.usedMemoryPeakBytes,
      processId: process.pid,
    };
  }

  /** Records the accounted usage's high-water mark (the cron calls this). */
  sampleMemoryPeak(): void {
    this.#counters.usedMemoryPeakBytes = Math.max(
      this.#counters.usedMemoryPeakBytes,
      this.keyspace.peakUsedBytes,
    );
  }

  async listen(): Promise<{ port: number; host: string }> {
    const host = this.#settings.host;
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen({ port: this.#settings.port, host, exclusive: true }, () => {
        this.#server.off("error", reject);
        resolve();
      });
    });
    const address = this.#server.address();
    this.#port = typeof address === "object" && address !== null ? address.port : 0;
    this.#settings.port = this.#port;
    this.#startedAtMs = this.#options.clock.nowMs();
    return { port: this.#port, host };
  }

  /** Stops accepting, lets every connection flush what it owes, then closes them (bounded). Idempotent. */
  close(): Promise<void> {
    this.#closed ??= this.#shutDown();
    return this.#closed;
  }

  async #shutDown(): Promise<void> {
    const stopped = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    const timeoutMs = this.#options.closeTimeoutMs ?? cacheServerDefaults.closeTimeoutMs;
    const open = [...this.#connections].map((connection) => connection.end());
    const timer = setTimeout(() => {
      for (const connection of this.#connections) connection.destroy();
    }, timeoutMs);
    try {
      await Promise.all(open);
      await stopped;
    } finally {
      clearTimeout(timer);
    }
  }

  #accept(socket: Socket): void {
    if (this.#closed !== undefined || this.#connections.size >= this.#settings.maxClients) {
      this.#counters.rejectedConnections += 1;
      socket.on("error", () => socket.destroy());
      socket.resume(); // drain and discard whatever it sends, so its FIN is seen and the socket closes
      socket.end(`-${REPLY_ERRORS.maxClients}\r\n`);
      return;
    }
    this.#counters.totalConnections += 1;
    const connection = new Connection(socket, this.#nextClientId++, this.#shared());
    this.#connections.add(connection);
    socket.once("close", () => this.#connections.delete(connection));
  }

  /** What a connection needs from the server. */
  #shared(): SharedState {
    return {
      keyspace: this.keyspace,
      writer: this.#writer,
      table: this.#table,
      node: this.#node,
      counters: this.#counters,
      limits: this.#settings.limits,
      maxPendingOutputBytes: this.#options.maxPendingOutputBytes ?? cacheServerDefaults.maxPendingOutputBytes,
      maxBatchOutputBytes: this.#options.maxBatchOutputBytes ?? cacheServerDefaults.maxBatchOutputBytes,
      log: this.#log,
    };
  }
}

/**
 * A bounded pool of connections to ONE cache node. With auto-pipelining one connection
 * already carries thousands of concurrent commands, so the pool is small on purpose
 * (`connectionsPerNode`, 1 by default, as Redis Cluster clients use): a second connection
 * helps only when one socket's writes or the node's per-connection work become the limit.
 * Connections open lazily on first use. A command carries an affinity (its slot, or its
 * key's hash) that picks the connection, so every command on one key travels on one
 * socket and runs in the order it was issued (SET then GET sees the SET); commands on
 * different keys may take different sockets, and no order between them is promised.
 * A connection that died is replaced on the next command, so a node that restarts is
 * used again without anyone restarting the client.
 *
 * @example
 * const pool = new NodePool("127.0.0.1:7000", { connectionsPerNode: 2 });
 * await pool.send(["SET", "k", "v"], keySlot("k"));
 * pool.openConnections; // 1: the other opens when a command's affinity picks it
 * await pool.close();
 */
import { clientErrors, requireClientInteger } from "./client-errors.ts";
import { NodeConnection, type NodeConnectionOptions } from "./node-connection.ts";
import type { Reply } from "./reply-parser.ts";

/** Bound on connections to one node from one pool. */
export const MAX_CONNECTIONS_PER_NODE = 64;

export type ConnectionOptions = Omit<NodeConnectionOptions, "host" | "port">;

export interface NodePoolOptions extends ConnectionOptions {
  readonly connectionsPerNode?: number;
  /** Sent first on every new connection (`READONLY` for replica reads); their replies are not awaited. */
  readonly setupCommands?: readonly (readonly string[])[];
}

/**
 * Splits `host:port` (the last colon separates the port, so a bracketed IPv6 host works).
 *
 * @example
 * parseAddress("127.0.0.1:7000"); // { host: "127.0.0.1", port: 7000 }
 */
export function parseAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(":");
  const port = Number(address.slice(colon + 1));
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
  if (colon <= 0 || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw clientErrors.create("CACHE_CLIENT_CONFIG_INVALID", {
      fields: { field: "address", expected: "host:port", got: address },
    });
  }
  return { host, port };
}

export class NodePool {
  readonly address: string;
  readonly #options: NodePoolOptions;
  readonly #size: number;
  readonly #host: string;
  readonly #port: number;
  readonly #connections: (NodeConnection | undefined)[];
  #opened = 0;
  #closed = false;

  constructor(address: string, options: NodePoolOptions = {}) {
    this.address = address;
    this.#options = options;
    this.#size = options.connectionsPerNode ?? 1;
    requireClientInteger("connectionsPerNode", this.#size, 1, MAX_CONNECTIONS_PER_NODE);
    ({ host: this.#host, port: this.#port } = parseAddress(address));
    this.#connections = new Array(this.#size).fill(undefined);
  }

  /** Connections currently open or opening. */
  get openConnections(): number {
    return this.#connections.filter((connection) => connection?.usable).length;
  }

  /** Connections ever opened by this pool (replacements included). */
  get openedTotal(): number {
    return this.#opened;
  }

  /** Commands waiting for replies across the pool. */
  get pending(): number {
    let pending = 0;
    for (const connection of this.#connections) pending += connection?.pending ?? 0;
    return pending;
  }

  /**
   * The connection for a command with this affinity (a non-negative integer: a slot, a key
   * hash), opened or replaced when needed. Callers that need two commands adjacent on one
   * socket (ASKING, then the command) send both on the connection this returns.
   */
  connection(affinity = 0): NodeConnection {
    if (this.#closed) throw clientErrors.create("CACHE_CLIENT_CLOSED", { fields: { address: this.address } });
    const slot = (affinity >>> 0) % this.#size;
    const existing = this.#connections[slot];
    if (existing?.usable) return existing;
    const fresh = new NodeConnection({ ...this.#options, host: this.#host, port: this.#port });
    // Queued ahead of any command (the FIFO keeps them first); a failure shows on the next command too.
    for (const setup of this.#options.setupCommands ?? []) fresh.send(setup).catch(() => {});
    this.#opened += 1;
    this.#connections[slot] = fresh;
    return fresh;
  }

  send(args: readonly string[], affinity = 0): Promise<Reply> {
    try {
      return this.connection(affinity).send(args);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Closes every connection gracefully (pending replies are awaited); the pool then refuses commands. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#connections.map((connection) => connection?.close()));
  }
}

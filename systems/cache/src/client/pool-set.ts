/**
 * The pools of every node a router talks to, keyed by `host:port`, created on first use
 * (a MOVED can name a node the client never heard of) and bounded by `maxNodes`, so a
 * stream of bogus redirects cannot make the client open connections without limit.
 *
 * @example
 * const pools = new PoolSet({ connectionsPerNode: 1, maxNodes: 1_000 });
 * await pools.get("127.0.0.1:7000").send(["PING"]);
 * await pools.remove("127.0.0.1:7000"); // closes that node's connections gracefully
 */
import { clientErrors, requireClientInteger } from "./client-errors.ts";
import { NodePool, type NodePoolOptions } from "./node-pool.ts";

/** Bound on distinct nodes one client keeps pools for. */
export const MAX_NODES = 1_000;

export interface PoolSetOptions extends NodePoolOptions {
  readonly maxNodes?: number;
}

export class PoolSet {
  readonly #options: PoolSetOptions;
  readonly #maxNodes: number;
  readonly #pools = new Map<string, NodePool>();
  #closed = false;

  constructor(options: PoolSetOptions = {}) {
    this.#options = options;
    this.#maxNodes = options.maxNodes ?? MAX_NODES;
    requireClientInteger("maxNodes", this.#maxNodes, 1, 100_000);
  }

  /** The pool of `address`, created when first asked for. */
  get(address: string): NodePool {
    if (this.#closed) throw clientErrors.create("CACHE_CLIENT_CLOSED", { fields: { address } });
    let pool = this.#pools.get(address);
    if (pool !== undefined) return pool;
    if (this.#pools.size >= this.#maxNodes) {
      throw clientErrors.create("CACHE_CLIENT_CONFIG_INVALID", {
        detail: `the client already has pools for maxNodes=${this.#maxNodes} nodes; raise maxNodes or check the redirects`,
        fields: { field: "maxNodes", expected: `at most ${this.#maxNodes} nodes`, got: address },
      });
    }
    pool = new NodePool(address, this.#options);
    this.#pools.set(address, pool);
    return pool;
  }

  /** Addresses with a pool. */
  addresses(): string[] {
    return [...this.#pools.keys()];
  }

  /** Open connections per address (what CA-22 counts). */
  openConnections(): Map<string, number> {
    return new Map([...this.#pools].map(([address, pool]) => [address, pool.openConnections]));
  }

  /** Closes and forgets the pool of `address` (a node that left); in-flight commands finish first. */
  async remove(address: string): Promise<void> {
    const pool = this.#pools.get(address);
    if (pool === undefined) return;
    this.#pools.delete(address);
    await pool.close();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((pool) => pool.close()));
  }
}

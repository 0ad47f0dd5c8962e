/**
 * Ring mode (CA-03, CA-10), memcached-style: the nodes know nothing of each other; the
 * client alone decides where a key lives, by a consistent-hashing ring with virtual nodes
 * (`HashRing`, murmur3). Adding a node takes about 1/N of the keys from the others, and
 * only those miss once; removing one spreads its keys over all the rest. Both happen on
 * the running client (`addNode`, `removeNode`): no restart, and the other nodes' keys
 * keep hitting. Every client must hold the same membership to agree on owners; that list
 * comes from configuration or a coordination service, which is outside this class.
 *
 * There are no redirects here (no node can know it is the wrong one): an error reply is
 * the caller's, a dead node's keys fail until it is removed from the ring.
 *
 * @example
 * const router = new RingRouter({ nodes: ["127.0.0.1:7001", "127.0.0.1:7002"], vnodes: 160 });
 * await router.send("event:42", ["GET", "event:42"]);
 * router.addNode("127.0.0.1:7003"); // ~1/3 of the keys now map to it
 * await router.removeNode("127.0.0.1:7001");
 */
import { HashRing } from "../domain/hash-ring.ts";
import { murmur3, murmur3Bytes } from "../domain/murmur3.ts";
import { clientErrors } from "./client-errors.ts";
import type { WireEncoding } from "./command-encoder.ts";
import type { KeyRouter, RouterEvent } from "./key-router.ts";
import { parseAddress } from "./node-pool.ts";
import { PoolSet, type PoolSetOptions } from "./pool-set.ts";
import type { Reply } from "./reply-parser.ts";

export interface RingRouterOptions extends PoolSetOptions {
  /** `host:port` of the nodes on the ring at start. */
  readonly nodes: readonly string[];
  /** Points per node: hundreds bring max/avg load near 1.0 (CA-10). Default 160. */
  readonly vnodes?: number;
  readonly onEvent?: (event: RouterEvent) => void;
}

export class RingRouter implements KeyRouter {
  readonly encoding: WireEncoding;
  readonly #ring: HashRing;
  readonly #pools: PoolSet;
  readonly #onEvent: ((event: RouterEvent) => void) | undefined;

  constructor(options: RingRouterOptions) {
    this.encoding = options.encoding ?? "utf8";
    this.#ring = new HashRing({ vnodes: options.vnodes ?? 160 });
    this.#pools = new PoolSet(options);
    this.#onEvent = options.onEvent;
    for (const node of options.nodes) this.addNode(node);
  }

  /** Puts `address` on the ring: keys on its arcs route to it from the next command on. */
  addNode(address: string, vnodes?: number): void {
    parseAddress(address);
    this.#ring.addNode(address, vnodes);
  }

  /** Takes `address` off the ring and closes its connections once their in-flight commands finish. */
  async removeNode(address: string): Promise<void> {
    this.#ring.removeNode(address);
    await this.#pools.remove(address);
  }

  /** The node that owns `key` now. */
  ownerOf(key: string): string {
    if (this.#ring.size === 0) throw clientErrors.create("CACHE_CLIENT_NO_NODES", { fields: { key } });
    return this.#ring.ownerOfHash(this.#hashOf(key));
  }

  #hashOf(key: string): number {
    if (this.encoding === "utf8") return murmur3(key);
    const bytes = Uint8Array.from(key, (ch) => ch.charCodeAt(0) & 0xff);
    return murmur3Bytes(bytes, bytes.length);
  }

  groupOf(key: string): string {
    return this.ownerOf(key);
  }

  nodes(): readonly string[] {
    return this.#ring.nodes;
  }

  openConnections(): Map<string, number> {
    return this.#pools.openConnections();
  }

  send(key: string, args: readonly string[]): Promise<Reply> {
    if (this.#ring.size === 0) {
      return Promise.reject(clientErrors.create("CACHE_CLIENT_NO_NODES", { fields: { key } }));
    }
    const hash = this.#hashOf(key);
    const address = this.#ring.ownerOfHash(hash);
    this.#onEvent?.({ type: "send", address, command: args[0]!, key });
    // The key's hash picks the connection, so commands on one key keep their order.
    return this.#pools.get(address).send(args, hash);
  }

  sendToNode(address: string, args: readonly string[]): Promise<Reply> {
    return this.#pools.get(address).send(args);
  }

  close(): Promise<void> {
    return this.#pools.close();
  }
}

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
 * the caller's. A dead node is handled the way memcached clients and mcrouter do it, when
 * asked to:
 * - `ejection` (libmemcached/twemproxy `auto_eject_hosts`, mcrouter TKO): after
 *   `failureLimit` consecutive link failures (refused or timed-out connections, links
 *   lost, reply timeouts — never error replies) the node leaves THIS client's ring, so
 *   only its keys move, to the survivors; an "eject" event says so. After `retryAfterMs`
 *   one PING probe decides: PONG puts it back (its keys return to it), anything else
 *   doubles the wait (capped). The last routable node is never ejected (`node-ejection.ts`).
 * - `gutter: { nodes, ttlS }` (mcrouter's gutter pool): a key whose owner is ejected, or
 *   whose command just failed on the owner's link, goes to a separate small ring instead
 *   of the survivors, with every TTL written there capped at `ttlS` (`gutter-pool.ts`,
 *   `gutter-command.ts`). With a gutter, ejected nodes keep their place on the ring.
 *   A command that failed on the owner's link is sent to the gutter when it surely did
 *   not run (the connection never opened) or only reads; a write whose link broke in
 *   flight may have run, so its error reaches the caller, as CONNECTION_LOST says.
 * Without either, a dead node's keys fail with typed errors until it is removed.
 *
 * Ejection is local: each client (each proxy) decides from its own failures, so for a
 * moment two clients may disagree on a key's owner; the copies that makes are the reason
 * for the gutter's short TTLs.
 *
 * @example
 * const router = new RingRouter({
 *   nodes: ["127.0.0.1:7001", "127.0.0.1:7002"], vnodes: 160,
 *   ejection: { failureLimit: 3, retryAfterMs: 3_000 },
 *   gutter: { nodes: ["127.0.0.1:7101"], ttlS: 10 },
 * });
 * await router.send("event:42", ["GET", "event:42"]);
 * router.addNode("127.0.0.1:7003"); // ~1/3 of the keys now map to it
 * await router.removeNode("127.0.0.1:7001");
 */

import { type Clock, systemClock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import { murmur3, murmur3Bytes } from "@casebook/kit/murmur3";
import { HashRing } from "../domain/hash-ring.ts";
import { policyErrors } from "../errors.ts";
import { clientErrors } from "./client-errors.ts";
import type { WireEncoding } from "./command-encoder.ts";
import { type GutterOptions, GutterPool } from "./gutter-pool.ts";
import type { KeyRouter, RouterEvent } from "./key-router.ts";
import { type EjectionOptions, NodeEjection } from "./node-ejection.ts";
import { parseAddress } from "./node-pool.ts";
import { PoolSet, type PoolSetOptions } from "./pool-set.ts";
import { type Reply, StatusReply } from "./reply-parser.ts";

export interface RingRouterOptions extends PoolSetOptions {
  /** `host:port` of the nodes on the ring at start. */
  readonly nodes: readonly string[];
  /** Points per node: hundreds bring max/avg load near 1.0 (CA-10). Default 160. */
  readonly vnodes?: number;
  readonly onEvent?: (event: RouterEvent) => void;
  /** Eject a node after consecutive link failures and probe it back (off when absent). */
  readonly ejection?: EjectionOptions;
  /** Send a down node's keys to this separate pool, TTLs capped (off when absent). */
  readonly gutter?: GutterOptions;
  /** Monotonic time for the ejection backoff, wall time for EXAT/PXAT on the gutter. */
  readonly clock?: Clock;
}

/** Commands that only read: safe to repeat on the gutter even if the owner may have run them. */
const READ_ONLY = new Set(["get", "mget", "exists", "ttl", "pttl", "type"]);

/** A link failure (the node's fault), as opposed to an error reply or a local refusal. */
function isLinkFailure(error: unknown): error is CasebookError {
  return (
    clientErrors.is(error, "CACHE_CLIENT_CONNECT_FAILED") ||
    clientErrors.is(error, "CACHE_CLIENT_CONNECTION_LOST") ||
    clientErrors.is(error, "CACHE_CLIENT_TIMEOUT")
  );
}

/** True when the command never reached the node: the connection did not open. */
function neverSent(error: CasebookError): boolean {
  return (
    error.code === "CACHE_CLIENT_CONNECT_FAILED" ||
    (error.code === "CACHE_CLIENT_TIMEOUT" && error.fields.phase === "connect")
  );
}

function isPong(reply: Reply): boolean {
  return reply === "PONG" || (reply instanceof StatusReply && reply.text === "PONG");
}

export class RingRouter implements KeyRouter {
  readonly encoding: WireEncoding;
  /** The nodes keys route to: members minus ejected ones (without a gutter; with one, all members). */
  readonly #ring: HashRing;
  /** Every member and its points, ejected or not. */
  readonly #members = new Map<string, number>();
  readonly #defaultVnodes: number;
  readonly #pools: PoolSet;
  readonly #onEvent: ((event: RouterEvent) => void) | undefined;
  readonly #clock: Clock;
  readonly #ejection: NodeEjection | undefined;
  readonly #gutter: GutterPool | undefined;
  /** One link failure rejects every command on that link with the same error: count it once. */
  readonly #counted = new WeakSet<object>();
  readonly #probes = new Map<string, NodeJS.Timeout>();
  #closed = false;

  constructor(options: RingRouterOptions) {
    this.encoding = options.encoding ?? "utf8";
    this.#defaultVnodes = options.vnodes ?? 160;
    this.#ring = new HashRing({ vnodes: this.#defaultVnodes });
    this.#pools = new PoolSet(options);
    this.#onEvent = options.onEvent;
    this.#clock = options.clock ?? systemClock;
    this.#ejection = options.ejection === undefined ? undefined : new NodeEjection(options.ejection);
    this.#gutter =
      options.gutter === undefined
        ? undefined
        : new GutterPool(options.gutter, this.#pools, (key) => this.#hashOf(key), this.#clock);
    for (const node of options.nodes) this.addNode(node);
  }

  /** Puts `address` on the ring: keys on its arcs route to it from the next command on. */
  addNode(address: string, vnodes = this.#defaultVnodes): void {
    parseAddress(address);
    if (this.#members.has(address)) {
      throw policyErrors.create("CACHE_RING_NODE_EXISTS", { fields: { node: address } });
    }
    this.#ring.addNode(address, vnodes);
    this.#members.set(address, vnodes);
  }

  /** Takes `address` off the ring and closes its connections once their in-flight commands finish. */
  async removeNode(address: string): Promise<void> {
    if (!this.#members.delete(address)) {
      throw policyErrors.create("CACHE_RING_NODE_UNKNOWN", { fields: { node: address } });
    }
    if (this.#ring.nodes.includes(address)) this.#ring.removeNode(address);
    this.#ejection?.forget(address);
    clearTimeout(this.#probes.get(address));
    this.#probes.delete(address);
    await this.#pools.remove(address);
  }

  /** The ring node that owns `key` now (with a gutter it may be ejected: then the command goes to the gutter). */
  ownerOf(key: string): string {
    if (this.#ring.size === 0) throw clientErrors.create("CACHE_CLIENT_NO_NODES", { fields: { key } });
    return this.#ring.ownerOfHash(this.#hashOf(key));
  }

  /** The gutter node that takes `key` while its owner is down (undefined without a gutter). */
  gutterOf(key: string): string | undefined {
    return this.#gutter?.ownerOf(key);
  }

  #hashOf(key: string): number {
    if (this.encoding === "utf8") return murmur3(key);
    const bytes = Uint8Array.from(key, (ch) => ch.charCodeAt(0) & 0xff);
    return murmur3Bytes(bytes, bytes.length);
  }

  groupOf(key: string): string {
    return this.ownerOf(key);
  }

  /** Nodes keys route to now: members that are not ejected. */
  nodes(): readonly string[] {
    return [...this.#members.keys()].filter((node) => !this.isEjected(node));
  }

  /** Every node on the ring's membership, ejected ones included. */
  members(): readonly string[] {
    return [...this.#members.keys()];
  }

  isEjected(address: string): boolean {
    return this.#ejection?.isEjected(address) === true;
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
    if (this.#gutter !== undefined && this.isEjected(address)) {
      return this.#toGutter(this.#gutter, address, key, args, "ejected");
    }
    this.#onEvent?.({ type: "send", address, command: args[0]!, key });
    // The key's hash picks the connection, so commands on one key keep their order.
    const sent = this.#pools.get(address).send(args, hash);
    if (this.#ejection === undefined && this.#gutter === undefined) return sent;
    return sent.then(
      (reply) => {
        this.#ejection?.recordSuccess(address);
        return reply;
      },
      (error: unknown) => this.#afterFailure(address, key, args, error),
    );
  }

  sendToNode(address: string, args: readonly string[]): Promise<Reply> {
    return this.#pools.get(address).send(args);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const timer of this.#probes.values()) clearTimeout(timer);
    this.#probes.clear();
    await this.#pools.close();
  }

  /** A command on `address` was rejected: count a link failure, then fail over to the gutter or rethrow. */
  #afterFailure(address: string, key: string, args: readonly string[], error: unknown): Promise<Reply> {
    if (!isLinkFailure(error)) return Promise.reject(error);
    this.#countFailure(address, error);
    const gutter = this.#gutter;
    if (gutter !== undefined && (neverSent(error) || READ_ONLY.has(args[0]!.toLowerCase()))) {
      return this.#toGutter(gutter, address, key, args, "failed");
    }
    return Promise.reject(error);
  }

  #toGutter(
    gutter: GutterPool,
    owner: string,
    key: string,
    args: readonly string[],
    reason: "ejected" | "failed",
  ): Promise<Reply> {
    this.#onEvent?.({ type: "gutter", owner, address: gutter.ownerOf(key), command: args[0]!, key, reason });
    return gutter.send(key, args);
  }

  #countFailure(address: string, error: CasebookError): void {
    const ejection = this.#ejection;
    if (ejection === undefined || this.#counted.has(error)) return;
    this.#counted.add(error);
    // A node removed meanwhile, or already ejected (a late failure of an old link), counts for nothing.
    if (!this.#members.has(address) || ejection.isEjected(address)) return;
    const routable = this.nodes().length;
    const decision = ejection.recordFailure(address, this.#clock.monotonicMs(), routable > 1);
    if (decision.verdict === "kept" && decision.failures === ejection.failureLimit) {
      this.#onEvent?.({ type: "eject-skipped", address, failures: decision.failures });
    }
    if (decision.verdict !== "eject") return;
    if (this.#gutter === undefined) this.#ring.removeNode(address);
    this.#onEvent?.({
      type: "eject",
      address,
      failures: decision.failures,
      retryAfterMs: decision.retryAfterMs,
    });
    this.#scheduleProbe(address, decision.retryAfterMs);
  }

  #scheduleProbe(address: string, afterMs: number): void {
    if (this.#closed) return;
    const timer = setTimeout(() => {
      this.#probes.delete(address);
      this.#probe(address).catch(() => {}); // #probe handles its own failures; nothing else can throw
    }, afterMs);
    // A pending probe must not keep a finished process alive.
    timer.unref();
    this.#probes.set(address, timer);
  }

  /** One PING: PONG readmits the node, anything else waits longer (bounded by the backoff cap). */
  async #probe(address: string): Promise<void> {
    const ejection = this.#ejection;
    if (this.#closed || ejection === undefined || !ejection.isEjected(address)) return;
    let ok = false;
    try {
      ok = isPong(await this.#pools.get(address).send(["PING"]));
    } catch {
      ok = false; // refused, timed out, lost: the node is still down
    }
    // Closed, or removed from the ring while the PING was out: nothing to readmit.
    if (this.#closed || !this.#members.has(address) || !ejection.isEjected(address)) return;
    if (!ok) {
      const retryAfterMs = ejection.probeFailed(address);
      this.#onEvent?.({ type: "probe", address, ok, retryAfterMs });
      this.#scheduleProbe(address, retryAfterMs);
      return;
    }
    ejection.readmit(address, this.#clock.monotonicMs());
    if (this.#gutter === undefined) this.#ring.addNode(address, this.#members.get(address));
    this.#onEvent?.({ type: "probe", address, ok });
    this.#onEvent?.({ type: "readmit", address });
  }
}

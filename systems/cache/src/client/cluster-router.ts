/**
 * Cluster mode (CA-05, CA-06, CA-07): the client keeps the slot → node map, hashes each key
 * to its slot (CRC16/XMODEM mod 16384, hash tags honoured) and sends the command straight
 * to the owner: one hop, no proxy. The map is a cache of the cluster's truth, corrected
 * by the cluster itself:
 *
 * - `-MOVED slot addr`: the slot moved for good: patch that slot, retry there, and refresh
 *   the whole map in the background (a reshard rarely moves one slot alone), at most once
 *   per `minRefreshIntervalMs`. A node that answered MOVED has said it no longer owns the
 *   slot, so a reloaded map that still names it as the owner came from a node that has not
 *   learned the move yet (gossip takes a moment): the patch is kept over it, until a reload
 *   agrees or `MOVED_TRUST_MS` passes;
 * - `-ASK slot addr`: the key is mid-migration: retry once at the target preceded by
 *   `ASKING` on the same connection, without touching the map;
 * - `-TRYAGAIN` / `-CLUSTERDOWN`: wait (exponential, capped) and retry; CLUSTERDOWN also
 *   refreshes the map (a failover is promoting a replica);
 * - the owner refuses connections: refresh the map from any node that answers and retry
 *   (a failed-over primary's slots now have another owner). A command that may have
 *   reached the node (link lost mid-flight, timeout) is NOT retried: it may have run.
 *
 * With `scaleReads: "replicas"` (CA-18's third hot-key remedy, CA-17's warm replicas), the
 * first try of a read-only command goes to a random replica of the slot over connections
 * that sent `READONLY`: reads spread over the copies, at the price of replication lag
 * (a replica may answer a value the primary already replaced). Writes, retries and
 * redirects always go to the primary.
 *
 * Every loop is bounded: `maxRedirects` hops per command, one refresh in flight.
 *
 * @example
 * const router = await ClusterRouter.connect({ seeds: ["127.0.0.1:7000"] });
 * await router.send("event:42", ["GET", "event:42"]);
 * await router.close();
 */
import { setTimeout as delay } from "node:timers/promises";
import { backoffDelayMs } from "@casebook/kit/backoff";
import { pick, type RandomSource, systemRandom } from "@casebook/kit/random";
import { redirectAction } from "../domain/redirect-reply.ts";
import { parseClusterSlots, SlotMap, slotOfKey } from "../domain/slot-map.ts";
import { clientErrors, requireClientInteger } from "./client-errors.ts";
import type { WireEncoding } from "./command-encoder.ts";
import type { KeyRouter, RouterEvent } from "./key-router.ts";
import { parseAddress } from "./node-pool.ts";
import { PoolSet, type PoolSetOptions } from "./pool-set.ts";
import { ErrorReply, type Reply } from "./reply-parser.ts";

export interface ClusterRouterOptions extends PoolSetOptions {
  /** `host:port` of a few nodes; any one that answers CLUSTER SLOTS is enough. */
  readonly seeds: readonly string[];
  /** Hops (redirects and retries) one command may take before it fails. */
  readonly maxRedirects?: number;
  /** First retry delay after TRYAGAIN, CLUSTERDOWN or a refused connection; doubles per attempt. */
  readonly retryBaseMs?: number;
  /** Cap of that delay. */
  readonly retryCapMs?: number;
  /** Background refreshes triggered by MOVED happen at most this often. */
  readonly minRefreshIntervalMs?: number;
  readonly onEvent?: (event: RouterEvent) => void;
  /** Where read-only commands go first: the primary (default) or a random replica. */
  readonly scaleReads?: "primary" | "replicas";
  /** Picks the replica (injected so tests are reproducible). */
  readonly random?: RandomSource;
}

/** Commands a replica may answer after READONLY. */
const READ_ONLY_COMMANDS = new Set(["get", "mget", "exists", "ttl", "pttl", "type", "strlen"]);

/** How long a MOVED patch outranks reloaded maps that still name the node that refused the slot. */
export const MOVED_TRUST_MS = 10_000;

/** What #attempt returns when the owner refused the connection and the map was refreshed. */
const RETRY_ELSEWHERE: unique symbol = Symbol("retry at the refreshed owner");

export const clusterRouterDefaults: Readonly<{
  maxRedirects: number;
  retryBaseMs: number;
  retryCapMs: number;
  minRefreshIntervalMs: number;
}> = Object.freeze({ maxRedirects: 5, retryBaseMs: 50, retryCapMs: 1_000, minRefreshIntervalMs: 1_000 });

export class ClusterRouter implements KeyRouter {
  readonly encoding: WireEncoding;
  readonly #options: ClusterRouterOptions & typeof clusterRouterDefaults;
  readonly #pools: PoolSet;
  readonly #replicaPools: PoolSet;
  readonly #random: RandomSource;
  #map = new SlotMap();
  #refreshing: Promise<void> | undefined;
  #lastRefreshMs = Number.NEGATIVE_INFINITY;
  /** Slots a node refused with MOVED: who refused, where the slot went, when (performance.now()). */
  readonly #movedAway = new Map<number, { from: string; to: string; atMs: number }>();

  constructor(options: ClusterRouterOptions) {
    this.#options = { ...clusterRouterDefaults, ...options };
    requireClientInteger("maxRedirects", this.#options.maxRedirects, 0, 100);
    requireClientInteger("retryBaseMs", this.#options.retryBaseMs, 1, 60_000);
    requireClientInteger("retryCapMs", this.#options.retryCapMs, this.#options.retryBaseMs, 600_000);
    requireClientInteger("minRefreshIntervalMs", this.#options.minRefreshIntervalMs, 0, 3_600_000);
    if (options.seeds.length === 0) {
      throw clientErrors.create("CACHE_CLIENT_CONFIG_INVALID", {
        fields: { field: "seeds", expected: "at least one host:port" },
      });
    }
    for (const seed of options.seeds) parseAddress(seed);
    this.encoding = options.encoding ?? "utf8";
    this.#pools = new PoolSet(options);
    this.#replicaPools = new PoolSet({ ...options, setupCommands: [["READONLY"]] });
    this.#random = options.random ?? systemRandom;
  }

  /** A router with its slot map loaded; fails with CACHE_CLIENT_NO_NODES when no seed answers. */
  static async connect(options: ClusterRouterOptions): Promise<ClusterRouter> {
    const router = new ClusterRouter(options);
    try {
      await router.refresh();
    } catch (error) {
      await router.close();
      throw error;
    }
    return router;
  }

  /** The current map's owner of `slot` (for tests and diagnostics). */
  ownerOf(slot: number): string | undefined {
    return this.#map.ownerOf(slot);
  }

  groupOf(key: string): string {
    return String(slotOfKey(key, this.encoding));
  }

  nodes(): readonly string[] {
    return this.#map.addresses;
  }

  openConnections(): Map<string, number> {
    const open = this.#pools.openConnections();
    for (const [address, count] of this.#replicaPools.openConnections())
      open.set(address, (open.get(address) ?? 0) + count);
    return open;
  }

  sendToNode(address: string, args: readonly string[]): Promise<Reply> {
    return this.#pools.get(address).send(args);
  }

  async send(key: string, args: readonly string[]): Promise<Reply> {
    const slot = slotOfKey(key, this.encoding);
    let address = this.#map.ownerOf(slot) ?? (await this.#ownerAfterRefresh(slot));
    let pools = this.#pools;
    const replica = this.#replicaFor(slot, args[0]!);
    if (replica !== undefined) {
      address = replica;
      pools = this.#replicaPools;
    }
    let asking = false;
    for (let hop = 0; hop <= this.#options.maxRedirects; hop++) {
      this.#emit({ type: "send", address, command: args[0]!, key });
      const reply = await this.#attempt(pools, address, args, asking, hop, slot);
      pools = this.#pools;
      if (reply === RETRY_ELSEWHERE) {
        // Mid-failover the reloaded map can name no owner yet (the node asked has marked the old
        // primary failed and not learned the promoted replica): the next hop tries the last
        // address again, whose refusal backs off and reloads once more, within maxRedirects.
        address = this.#map.ownerOf(slot) ?? address;
        asking = false;
        continue;
      }
      if (!(reply instanceof ErrorReply)) return reply;
      const next = redirectAction(reply.message, parseAddress(address).host);
      if (next === undefined) return reply;
      if (next.kind === "moved") {
        this.#map.assign(next.slot, next.address);
        this.#movedAway.set(next.slot, { from: address, to: next.address, atMs: performance.now() });
        this.#emit({ type: "moved", slot: next.slot, from: address, to: next.address });
        this.#refreshSoon();
      } else if (next.kind === "ask") {
        this.#emit({ type: "ask", slot: next.slot, from: address, to: next.address });
      } else {
        await this.#backOff(next.kind, address, hop);
        if (next.kind === "clusterdown") await this.refresh().catch(() => {});
        address = this.#map.ownerOf(slot) ?? address;
        asking = false;
        continue;
      }
      address = next.address;
      asking = next.kind === "ask";
    }
    throw clientErrors.create("CACHE_CLIENT_TOO_MANY_REDIRECTS", {
      fields: { key, slot, maxRedirects: this.#options.maxRedirects, lastAddress: address },
    });
  }

  /** A random replica of `slot` for a read-only command when scaling reads; undefined otherwise. */
  #replicaFor(slot: number, command: string): string | undefined {
    if (this.#options.scaleReads !== "replicas" || !READ_ONLY_COMMANDS.has(command.toLowerCase()))
      return undefined;
    const replicas = this.#map.replicasOf(slot);
    return replicas.length === 0 ? undefined : pick(this.#random, replicas);
  }

  /** One try at `address`; RETRY_ELSEWHERE when the node refused the connection (the map is refreshed first). */
  async #attempt(
    pools: PoolSet,
    address: string,
    args: readonly string[],
    asking: boolean,
    hop: number,
    slot: number,
  ): Promise<Reply | typeof RETRY_ELSEWHERE> {
    try {
      // The slot picks the connection: commands on one slot keep their order.
      if (!asking) return await pools.get(address).send(args, slot);
      // ASKING applies to the next command on the same connection only: both leave in one write.
      const connection = pools.get(address).connection(slot);
      const [, reply] = await Promise.all([connection.send(["ASKING"]), connection.send(args)]);
      return reply;
    } catch (error) {
      // Only a command that never left is safe to resend: CONNECT_FAILED. Lost or timed-out
      // commands may have run, so they fail to the caller, and the map is refreshed for the next.
      if (!clientErrors.is(error, "CACHE_CLIENT_CONNECT_FAILED") || hop >= this.#options.maxRedirects) {
        if (clientErrors.is(error)) this.#refreshSoon();
        throw error;
      }
      await this.#backOff("connect", address, hop);
      await this.refresh().catch(() => {});
      return RETRY_ELSEWHERE;
    }
  }

  async #backOff(
    reason: "tryagain" | "clusterdown" | "connect",
    address: string,
    hop: number,
  ): Promise<void> {
    this.#emit({ type: "retry", reason, address, attempt: hop + 1 });
    await delay(backoffDelayMs(hop + 1, this.#options.retryBaseMs, this.#options.retryCapMs));
  }

  async #ownerAfterRefresh(slot: number): Promise<string> {
    await this.refresh();
    const owner = this.#map.ownerOf(slot);
    if (owner === undefined) throw clientErrors.create("CACHE_CLIENT_NO_NODES", { fields: { slot } });
    return owner;
  }

  /**
   * Reloads the slot map from the first node that answers CLUSTER SLOTS (known nodes, then
   * the seeds). Concurrent callers share one refresh.
   */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#reload().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** A background refresh, unless one ran within minRefreshIntervalMs. */
  #refreshSoon(): void {
    if (performance.now() - this.#lastRefreshMs < this.#options.minRefreshIntervalMs) return;
    this.#lastRefreshMs = performance.now();
    this.refresh().catch(() => {}); // failures are reported as refresh-failed events
  }

  async #reload(): Promise<void> {
    this.#lastRefreshMs = performance.now();
    const candidates = [...new Set([...this.#map.addresses, ...this.#options.seeds])];
    const reasons: string[] = [];
    for (const address of candidates) {
      try {
        const reply = await this.#pools.get(address).send(["CLUSTER", "SLOTS"]);
        if (reply instanceof ErrorReply) throw new Error(reply.message);
        const ranges = parseClusterSlots(reply, parseAddress(address).host);
        if (ranges.length === 0) throw new Error("CLUSTER SLOTS listed no slots");
        this.#map = this.#keepNewerMoves(SlotMap.fromRanges(ranges));
        this.#emit({ type: "refresh", address, ranges: ranges.length });
        return;
      } catch (error) {
        reasons.push(`${address}: ${(error as Error).message}`);
      }
    }
    this.#emit({ type: "refresh-failed", reason: reasons.join("; ") });
    throw clientErrors.create("CACHE_CLIENT_NO_NODES", {
      detail: `no node answered CLUSTER SLOTS: ${reasons.join("; ")}`,
      fields: { tried: candidates },
    });
  }

  /**
   * A reloaded map that names, as a slot's owner, the node that refused that slot with MOVED
   * is older than the MOVED: the patch stays. A reload that names anyone else has caught up
   * (or seen a later move): the record goes, as it does after MOVED_TRUST_MS.
   */
  #keepNewerMoves(map: SlotMap): SlotMap {
    const nowMs = performance.now();
    for (const [slot, move] of this.#movedAway) {
      if (map.ownerOf(slot) === move.from && nowMs - move.atMs < MOVED_TRUST_MS) map.assign(slot, move.to);
      else this.#movedAway.delete(slot);
    }
    return map;
  }

  #emit(event: RouterEvent): void {
    this.#options.onEvent?.(event);
  }

  async close(): Promise<void> {
    await this.#refreshing?.catch(() => {});
    await Promise.all([this.#pools.close(), this.#replicaPools.close()]);
  }
}

/**
 * The client library's typed face (CA-01, CA-06): get, set with TTL, SET NX for leases,
 * delete, INCRBY, and MGET as a scatter-gather that keeps the caller's order (CA-07), over
 * either routing mode: `CacheClient.cluster` (Redis Cluster slots, MOVED/ASK) or
 * `CacheClient.ring` (a consistent-hashing ring of independent nodes; optionally ejecting
 * dead nodes and failing over to a gutter pool, see ring-router.ts). Underneath: a small
 * pool of auto-pipelined connections per node.
 *
 * Values are strings (UTF-8 by default); serialising objects is the caller's choice, and
 * cache-aside's codec does it. An error reply becomes CACHE_CLIENT_SERVER_ERROR carrying
 * the node's line as `reply`.
 *
 * @example
 * const cache = await CacheClient.cluster({ seeds: ["127.0.0.1:7000"] });
 * await cache.set("event:42", page, { exS: 300 });
 * await cache.set("lock:event:42", token, { nx: true, pxMs: 5_000 }); // false if someone holds it
 * const [a, b] = await cache.mget(["{event:42}:seats", "{event:42}:page"]);
 * await cache.close();
 */
import { clientErrors, requireClientInteger } from "./client-errors.ts";
import { ClusterRouter, type ClusterRouterOptions } from "./cluster-router.ts";
import { DEFAULT_MAX_KEYS_PER_COMMAND, groupKeys } from "./key-groups.ts";
import type { KeyRouter } from "./key-router.ts";
import { ErrorReply, type Reply, StatusReply } from "./reply-parser.ts";
import { RingRouter, type RingRouterOptions } from "./ring-router.ts";

export interface SetOptions {
  /** TTL in seconds (`EX`). */
  readonly exS?: number;
  /** TTL in milliseconds (`PX`); used when exS is absent. */
  readonly pxMs?: number;
  /** Only if absent (`NX`): locks and leases. */
  readonly nx?: boolean;
  /** Only if present (`XX`). */
  readonly xx?: boolean;
}

export interface CacheClientOptions {
  /** Keys per MGET/DEL sent to one node; larger groups are split (and still pipelined). */
  readonly maxKeysPerCommand?: number;
}

function serverError(reply: ErrorReply, command: string): Error {
  return clientErrors.create("CACHE_CLIENT_SERVER_ERROR", {
    detail: `The cache node answered ${command} with: ${reply.message}`,
    fields: { reply: reply.message, command },
  });
}

function unexpected(reply: Reply, command: string): Error {
  return clientErrors.create("CACHE_CLIENT_UNEXPECTED_REPLY", {
    fields: { reply: JSON.stringify(reply, (_, v) => (typeof v === "bigint" ? String(v) : v)), command },
  });
}

function bulkOrNull(reply: Reply, command: string): string | null {
  if (reply === null || typeof reply === "string") return reply;
  if (reply instanceof ErrorReply) throw serverError(reply, command);
  throw unexpected(reply, command);
}

function integer(reply: Reply, command: string): number {
  if (typeof reply === "number") return reply;
  if (reply instanceof ErrorReply) throw serverError(reply, command);
  throw unexpected(reply, command);
}

function setArgs(key: string, value: string, options: SetOptions): string[] {
  const args = ["SET", key, value];
  if (options.exS !== undefined) args.push("EX", String(options.exS));
  else if (options.pxMs !== undefined) args.push("PX", String(options.pxMs));
  if (options.nx) args.push("NX");
  if (options.xx) args.push("XX");
  return args;
}

export class CacheClient {
  readonly router: KeyRouter;
  readonly #maxKeys: number;

  constructor(router: KeyRouter, options: CacheClientOptions = {}) {
    this.router = router;
    this.#maxKeys = options.maxKeysPerCommand ?? DEFAULT_MAX_KEYS_PER_COMMAND;
    requireClientInteger("maxKeysPerCommand", this.#maxKeys, 1, 1_000_000);
  }

  /** A client of a Redis Cluster (or our nodes in cluster mode), its slot map loaded. */
  static async cluster(options: ClusterRouterOptions & CacheClientOptions): Promise<CacheClient> {
    return new CacheClient(await ClusterRouter.connect(options), options);
  }

  /** A client of independent nodes placed on a consistent-hashing ring. */
  static ring(options: RingRouterOptions & CacheClientOptions): CacheClient {
    return new CacheClient(new RingRouter(options), options);
  }

  /** The value, or null on a miss. */
  async get(key: string): Promise<string | null> {
    return bulkOrNull(await this.router.send(key, ["GET", key]), "GET");
  }

  /** True when stored; false when NX/XX was not met. */
  async set(key: string, value: string, options: SetOptions = {}): Promise<boolean> {
    const reply = await this.router.send(key, setArgs(key, value, options));
    if (reply === null) return false;
    if (reply === "OK" || (reply instanceof StatusReply && reply.text === "OK")) return true;
    if (reply instanceof ErrorReply) throw serverError(reply, "SET");
    throw unexpected(reply, "SET");
  }

  /** Keys removed; keys on different nodes are deleted in parallel. */
  async del(...keys: string[]): Promise<number> {
    const groups = groupKeys(this.router, keys, this.#maxKeys);
    const counts = await Promise.all(
      groups.map(async (group) =>
        integer(await this.router.send(group.keys[0]!, ["DEL", ...group.keys]), "DEL"),
      ),
    );
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /** Values (null for misses) in the order of `keys`, gathered from every node involved. */
  async mget(keys: readonly string[]): Promise<(string | null)[]> {
    const values = new Array<string | null>(keys.length).fill(null);
    const groups = groupKeys(this.router, keys, this.#maxKeys);
    await Promise.all(
      groups.map(async (group) => {
        const reply = await this.router.send(group.keys[0]!, ["MGET", ...group.keys]);
        if (reply instanceof ErrorReply) throw serverError(reply, "MGET");
        if (!Array.isArray(reply) || reply.length !== group.keys.length) throw unexpected(reply, "MGET");
        reply.forEach((value, i) => {
          values[group.positions[i]!] = bulkOrNull(value, "MGET");
        });
      }),
    );
    return values;
  }

  /** The counter after adding `delta` (atomic on the node). */
  async incrby(key: string, delta: number): Promise<number> {
    return integer(await this.router.send(key, ["INCRBY", key, String(delta)]), "INCRBY");
  }

  /** Remaining TTL in ms: -1 without a TTL, -2 when the key does not exist. */
  async pttl(key: string): Promise<number> {
    return integer(await this.router.send(key, ["PTTL", key]), "PTTL");
  }

  /** Any single-key command, routed by `key`; the raw reply (an ErrorReply too). */
  command(key: string, args: readonly string[]): Promise<Reply> {
    return this.router.send(key, args);
  }

  close(): Promise<void> {
    return this.router.close();
  }
}

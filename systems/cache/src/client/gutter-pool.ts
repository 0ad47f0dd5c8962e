/**
 * The gutter pool (mcrouter's failover to a "gutter"): a small, separate ring of spare
 * nodes that takes the keys of a ring node that is down, instead of rehashing them onto
 * the other ring nodes. Two things follow. The database sees a warm-up of one node's keys
 * on a few spares rather than a cold miss storm spread everywhere; and because every
 * write to the gutter carries a TTL of at most `ttlS` (`gutter-command.ts`), the copies
 * made during the outage vanish soon after the node is back, where a rehash would leave
 * full-TTL copies on the other nodes that a client still ejecting the node keeps reading.
 *
 * It shares the router's `PoolSet` (its connections show in `openConnections`) and hash;
 * a gutter node's own failures are not ejected or failed over: they reach the caller.
 *
 * @example
 * const gutter = new GutterPool({ nodes: ["127.0.0.1:7100"], ttlS: 10 }, pools, murmur3);
 * await gutter.send("event:42", ["SET", "event:42", page, "EX", "300"]); // stored with EX 10
 */
import type { Clock } from "@casebook/kit/clock";
import { HashRing } from "../domain/hash-ring.ts";
import { clientErrors, requireClientInteger } from "./client-errors.ts";
import { combineGutterReplies, MAX_GUTTER_TTL_S, planGutterCommand } from "./gutter-command.ts";
import { parseAddress } from "./node-pool.ts";
import type { PoolSet } from "./pool-set.ts";
import type { Reply } from "./reply-parser.ts";

export interface GutterOptions {
  /** `host:port` of the gutter nodes: not on the main ring, usually a few. */
  readonly nodes: readonly string[];
  /** Cap on every TTL written to the gutter, in seconds (mcrouter's default gutter TTL is 10 s). */
  readonly ttlS: number;
  /** Points per gutter node. Default 160. */
  readonly vnodes?: number;
}

export class GutterPool {
  readonly ttlS: number;
  readonly #ring: HashRing;
  readonly #pools: PoolSet;
  readonly #hashOf: (key: string) => number;
  readonly #clock: Clock;

  constructor(options: GutterOptions, pools: PoolSet, hashOf: (key: string) => number, clock: Clock) {
    requireClientInteger("gutter.ttlS", options.ttlS, 1, MAX_GUTTER_TTL_S);
    if (options.nodes.length === 0) {
      throw clientErrors.create("CACHE_CLIENT_CONFIG_INVALID", {
        fields: { field: "gutter.nodes", expected: "at least one host:port", got: "[]" },
      });
    }
    this.ttlS = options.ttlS;
    this.#ring = new HashRing({ vnodes: options.vnodes ?? 160 });
    for (const node of options.nodes) {
      parseAddress(node);
      this.#ring.addNode(node);
    }
    this.#pools = pools;
    this.#hashOf = hashOf;
    this.#clock = clock;
  }

  nodes(): readonly string[] {
    return this.#ring.nodes;
  }

  /** The gutter node that holds `key` while its ring owner is down. */
  ownerOf(key: string): string {
    return this.#ring.ownerOfHash(this.#hashOf(key));
  }

  /**
   * Sends `args` (routed by `key`) to the gutter, rewritten so nothing stored outlives
   * `ttlS`; rejects with CACHE_CLIENT_GUTTER_REFUSED for a command it cannot cap.
   */
  async send(key: string, args: readonly string[]): Promise<Reply> {
    const plan = planGutterCommand(args, this.ttlS, this.#clock.nowMs());
    if (plan.kind === "reply") return plan.reply;
    if (plan.kind === "refuse") {
      throw clientErrors.create("CACHE_CLIENT_GUTTER_REFUSED", {
        fields: { command: plan.command, key, ttlS: this.ttlS },
      });
    }
    // Each command rides the connection its own key's hash picks, so it stays in order with
    // other commands on that key; a counter and its PEXPIRE share a key, hence a connection.
    const replies = await Promise.all(
      plan.commands.map(({ key: target, args: command }) => {
        const hash = this.#hashOf(target);
        return this.#pools.get(this.#ring.ownerOfHash(hash)).send(command, hash);
      }),
    );
    return combineGutterReplies(plan.combine, replies);
  }
}

/**
 * The fan-out (FD-03/08/16/17): what a worker does with one event from the queue.
 *
 * - **post**: read the author's follower count, pick the tier (tiers.ts); for push, read the
 *   followers page by page from the (followee, follower) index and write the id into each
 *   list in pipelined batches; for push-active, only followers active in the last N days;
 *   for pull, write nothing (readers pull it, FD-06). The author's own list always gets it.
 * - **follow**: merge the followee's recent posts into the follower's list (unless the
 *   followee is pulled anyway); **unfollow**: take them out.
 * - Every post also goes into its author's cached recent ids (`celebrities`, when cached), and
 *   every follow or unfollow drops the follower's cached view (`views`): the API does both
 *   right after its commit; the fan-out does them again from the durable event, so a write the
 *   API lost to a Redis failure is made here (issue 20's warm read).
 *
 * Idempotent by construction (FD-17): every write is a ZADD of the same member with the same
 * score, or a ZREM — a redelivered event rewrites what is already there. No I/O of its own:
 * everything goes through the ports, time through the clock.
 *
 * @example
 * const fanout = new Fanout({ graph, timelines, posts, clock, thresholds: () => t, activeDays: 7, pageSize: 1_000, cap: 128 });
 * await fanout.handle({ kind: "post", actorId: 7n, targetId: postId }); // { tier: "push", written: 200 }
 */
import type { Clock } from "@casebook/kit/clock";
import { decodeSnowflake } from "@casebook/kit/snowflake";
import type { FanoutGraph, FanoutTimelines, PostReader } from "./ports.ts";
import { type Thresholds, type Tier, tierOf } from "./tiers.ts";

const DAY_MS = 86_400_000;
/** Bound on follower pages one post walks: 10 000 pages of 1 000 = 10M followers. */
export const MAX_FOLLOWER_PAGES = 10_000;
/** Bound on follower pages whose list writes are in flight at once (one post's fan-out). */
export const MAX_PAGES_IN_FLIGHT = 4;

export interface FanoutOptions {
  readonly graph: FanoutGraph;
  readonly timelines: FanoutTimelines;
  readonly posts: Pick<PostReader, "recentOf">;
  readonly clock: Clock;
  readonly thresholds: () => Thresholds;
  /** The push-active tier's window. */
  readonly activeDays: number;
  /** Followers read per query and written per pipelined batch. */
  readonly pageSize: number;
  /** The list's cap: a follow merges at most this many recent posts. */
  readonly cap: number;
  /** Authors' cached recent ids (pulled readers read them): every post goes in. */
  readonly celebrities?: { add(authorId: bigint, entry: { id: bigint; atMs: number }): Promise<void> };
  /** Readers' cached views: a follow or unfollow drops the follower's. */
  readonly views?: { invalidate(userId: bigint): Promise<void> };
}

export interface FanoutCommand {
  readonly kind: "post" | "follow" | "unfollow";
  readonly actorId: bigint;
  readonly targetId: bigint;
}

export interface FanoutResult {
  readonly tier: Tier | "graph";
  /** Lists the id went into (missing lists are skipped). */
  readonly written: number;
  /** Lists attempted. */
  readonly attempted: number;
}

export class Fanout {
  readonly #o: FanoutOptions;

  constructor(options: FanoutOptions) {
    if (!(Number.isInteger(options.pageSize) && options.pageSize >= 1 && options.pageSize <= 1_000))
      throw new RangeError("pageSize must be in 1..1000");
    this.#o = options;
  }

  handle(command: FanoutCommand): Promise<FanoutResult> {
    if (command.kind === "post") return this.#post(command.actorId, command.targetId);
    if (command.kind === "follow") return this.#follow(command.actorId, command.targetId);
    return this.#unfollow(command.actorId, command.targetId);
  }

  async #post(authorId: bigint, postId: bigint): Promise<FanoutResult> {
    const { graph, timelines } = this.#o;
    const entry = { id: postId, atMs: decodeSnowflake(postId).timestampMs };
    const tier = tierOf(await graph.followerCount(authorId), this.#o.thresholds());
    await this.#o.celebrities?.add(authorId, entry);
    let written = await timelines.pushMany([authorId], entry);
    let attempted = 1;
    if (tier === "pull") return { tier, written, attempted };
    const activeSinceMs =
      tier === "push-active" ? this.#o.clock.nowMs() - this.#o.activeDays * DAY_MS : undefined;
    // Up to MAX_PAGES_IN_FLIGHT pages' writes stay in flight while the next page is read: the
    // SQL round trips and several Redis pipelines overlap instead of taking turns.
    const inFlight: Promise<number>[] = [];
    let afterId = 0n;
    let failure: unknown;
    try {
      for (let page = 0; page < MAX_FOLLOWER_PAGES; page++) {
        const followers = await graph.followersPage(authorId, {
          afterId,
          limit: this.#o.pageSize,
          activeSinceMs,
        });
        if (followers.length === 0) break;
        const writing = timelines.pushMany(followers, entry);
        // Handled when settled below; until then a failure must not surface as unhandled.
        writing.catch(() => {});
        inFlight.push(writing);
        attempted += followers.length;
        afterId = followers.at(-1)!;
        if (inFlight.length >= MAX_PAGES_IN_FLIGHT) written += await inFlight.shift()!;
        if (followers.length < this.#o.pageSize) break;
      }
    } catch (error) {
      failure = error;
    }
    // Settle every batch before returning or rethrowing: never leave a write behind.
    for (const settled of await Promise.allSettled(inFlight)) {
      if (settled.status === "fulfilled") written += settled.value;
      else failure ??= settled.reason;
    }
    if (failure !== undefined) throw failure;
    return { tier, written, attempted };
  }

  async #follow(followerId: bigint, followeeId: bigint): Promise<FanoutResult> {
    await this.#o.views?.invalidate(followerId);
    const tier = tierOf(await this.#o.graph.followerCount(followeeId), this.#o.thresholds());
    if (tier === "pull") return { tier: "graph", written: 0, attempted: 0 };
    const entries = await this.#o.posts.recentOf(followeeId, { limit: this.#o.cap });
    await this.#o.timelines.mergeInto(followerId, entries);
    return { tier: "graph", written: entries.length, attempted: entries.length };
  }

  async #unfollow(followerId: bigint, followeeId: bigint): Promise<FanoutResult> {
    await this.#o.views?.invalidate(followerId);
    const entries = await this.#o.posts.recentOf(followeeId, { limit: this.#o.cap });
    const removed = await this.#o.timelines.remove(
      followerId,
      entries.map((e) => e.id),
    );
    return { tier: "graph", written: removed, attempted: entries.length };
  }
}

/**
 * The home feed's hybrid read (FD-06/13/14/18/19/20):
 *
 * 1. In parallel: the user's pre-built list (Redis), and the followees in the pull tier with the
 *    user's mutes and blocks (one graph query); then one query per pulled celebrity, in parallel, each through
 *    a short-TTL cache (FD-13: celebrity posts are read by everyone who follows them).
 * 2. A missing list (restart, or a user back after months) is rebuilt by pull ONCE: under the
 *    per-user lock (SET lock:rebuild:{user} NX PX, owner-checked release), within a cap on
 *    concurrent rebuilds, bounded by count and age (FD-19/20). The pulled entries enter the
 *    merge as if they came from the list. A read that does not rebuild (lock held elsewhere,
 *    cap reached) gets what exists and `partial: true` — the API's 206, as Mastodon does.
 *    When the lists' store itself is unreachable (a Redis master dying, until the sentinel
 *    promotes its replica), the read pulls the same bounded way without writing anything and
 *    answers partial (206); past the cap it fails as before (503).
 * 3. Merge by Snowflake id, cut at the cursor (never OFFSET, FD-15), fetch the page's content
 *    in one batch, drop deleted posts (FD-21) and hidden authors, and return the page with a
 *    `before` cursor for the next page and a `since` cursor for pull-to-refresh.
 *
 * With a `warm` reader (issue 20) all of that is first tried in one round trip to the caches
 * (the view, the celebrity lists and the bodies cached beside the lists): a page it serves is
 * the page steps 1–3 would make; when anything is not cached the steps above run, through
 * `graph`, `posts` and `celebrityIds` that fill the caches on the way.
 *
 * @example
 * const feed = new HomeFeed({ timelines, posts, graph, clock, thresholds: () => t, ... });
 * const page = await feed.read(42n, { limit: 50 }); // { posts, nextCursor, newerCursor, partial }
 */
import type { Clock } from "@casebook/kit/clock";
import type { FeedCursor } from "./feed-cursor.ts";
import { mergeIds } from "./feed-merge.ts";
import type {
  GraphReader,
  Post,
  PostReader,
  TimelineEntry,
  TimelinePort,
  WarmPage,
  WarmReader,
} from "./ports.ts";
import type { Thresholds } from "./tiers.ts";

/** Bound on content fetches one page makes when deleted/hidden posts thin it out. */
export const MAX_FETCH_ROUNDS = 4;

export interface HomeFeedOptions {
  readonly timelines: TimelinePort;
  readonly posts: PostReader;
  readonly graph: GraphReader;
  readonly clock: Clock;
  readonly thresholds: () => Thresholds;
  /** The list's cap: a rebuild pulls at most this many entries (FD-20's count bound). */
  readonly cap: number;
  /** FD-20's age bound: a rebuild pulls nothing older. */
  readonly rebuildMaxAgeMs: number;
  /** Cap on rebuilds in flight in this process (FD-18/19). */
  readonly maxRebuilds: number;
  /** A fresh owner token for a rebuild lock. */
  readonly newOwner: () => string;
  /** Celebrity recent ids, cached with a short TTL (FD-13); a pass-through when the TTL is 0. */
  readonly celebrityIds: (authorId: bigint, beforeId: bigint | undefined, limit: number) => Promise<bigint[]>;
  /** Told of every rebuild: whether it ran, and how many entries it pulled. */
  readonly onRebuild?: (
    outcome: "rebuilt" | "locked" | "capped" | "lost" | "degraded",
    entries: number,
  ) => void;
  /**
   * True for an error that means the lists' store is unreachable (Redis down or failing over):
   * the read then pulls instead (FD-18), within the rebuild cap. Default: none is.
   */
  readonly isListStoreDown?: (error: unknown) => boolean;
  /** The one-round-trip read of a warm page; none: every read takes the steps. */
  readonly warm?: WarmReader;
  /** Told of every read: served warm (one round trip) or not. */
  readonly onRead?: (path: "warm" | "cold") => void;
}

export interface FeedPage {
  readonly posts: Post[];
  /** `before` cursor for the next (older) page; null when this is the end. */
  readonly nextCursor: FeedCursor | null;
  /** `since` cursor for what is newer than this page (pull-to-refresh). */
  readonly newerCursor: FeedCursor | null;
  /** True while the list is missing or being rebuilt by another request: what exists now (206). */
  readonly partial: boolean;
  /**
   * A page served warm: the posts of `posts` as the API writes them, joined by commas — the
   * cached bodies as the cache's script joined them (`posts` is then decoded only when read).
   * Undefined on the steps' pages.
   */
  readonly rendered?: string;
}

/**
 * A page served warm: its posts decoded only if something reads them (the API sends `rendered`).
 * A class with the getter on its prototype, not an object literal with `get posts()`: V8 gives a
 * literal's getter an accessor pair in the old generation, which kept every read's page, reply and
 * frames alive through each young collection (issue 20: ~3 MB promoted per scavenge).
 */
class WarmFeedPage implements FeedPage {
  readonly nextCursor: FeedCursor | null;
  readonly newerCursor: FeedCursor | null;
  readonly partial: boolean;
  readonly rendered: string;
  readonly #warm: WarmPage;

  constructor(warm: WarmPage, cursors: Pick<FeedPage, "nextCursor" | "newerCursor">) {
    this.#warm = warm;
    this.nextCursor = cursors.nextCursor;
    this.newerCursor = cursors.newerCursor;
    this.partial = warm.state === "rebuilding";
    this.rendered = warm.rendered;
  }

  get posts(): Post[] {
    return this.#warm.posts;
  }
}

export class HomeFeed {
  readonly #o: HomeFeedOptions;
  #rebuildsInFlight = 0;

  constructor(options: HomeFeedOptions) {
    this.#o = options;
  }

  get rebuildsInFlight(): number {
    return this.#rebuildsInFlight;
  }

  async read(userId: bigint, query: { cursor?: FeedCursor; limit: number }): Promise<FeedPage> {
    const { cursor, limit } = query;
    const beforeId = cursor && "before" in cursor ? cursor.before : undefined;
    const sinceId = cursor && "since" in cursor ? cursor.since : undefined;
    // Twice the page: room for deleted posts and hidden authors filtered below.
    const window = limit * 2;
    const warm = await this.#readWarm(userId, { beforeId, sinceId, limit, window });
    this.#o.onRead?.(warm ? "warm" : "cold");
    if (warm) {
      const count = warm.count;
      const cursors = this.#cursorsOf(
        count,
        warm.firstId,
        warm.lastId,
        limit,
        warm.listCount >= window,
        sinceId,
      );
      return new WarmFeedPage(warm, cursors);
    }
    // The graph answers pulled followees and hidden authors in one round trip; the celebrity
    // reads start as soon as it does, while the list read is still in flight.
    const view = this.#o.graph.readerView(userId, this.#o.thresholds().activePushMax);
    const [list, celebrities, { hidden }] = await Promise.all([
      this.#readList(userId, { beforeId, sinceId, limit: window }),
      view.then(({ pulled }) => Promise.all(pulled.map((id) => this.#o.celebrityIds(id, beforeId, window)))),
      view,
    ]);
    let listIds = list.ids;
    let partial = list.state === "rebuilding" || list.state === "degraded";
    if (list.state === "missing") {
      const rebuilt = await this.#rebuild(userId);
      partial = rebuilt === undefined;
      listIds = (rebuilt ?? []).map((e) => e.id);
    }
    const candidates = mergeIds([listIds, ...celebrities], cursor);
    const page = await this.#fetchPage(candidates, hidden, limit);
    return this.#pageOf(page, limit, list.ids.length >= window, sinceId, partial);
  }

  #pageOf(
    page: Post[],
    limit: number,
    listFull: boolean,
    sinceId: bigint | undefined,
    partial: boolean,
  ): FeedPage {
    return {
      posts: page,
      ...this.#cursorsOf(page.length, page[0]?.id, page.at(-1)?.id, limit, listFull, sinceId),
      partial,
    };
  }

  /** A page's cursors from its size and its first and last ids. */
  #cursorsOf(
    count: number,
    firstId: bigint | undefined,
    lastId: bigint | undefined,
    limit: number,
    listFull: boolean,
    sinceId: bigint | undefined,
  ): Pick<FeedPage, "nextCursor" | "newerCursor"> {
    const more = count === limit || listFull;
    const first = firstId ?? sinceId;
    return {
      nextCursor: count > 0 && more ? { before: lastId! } : null,
      newerCursor: first === undefined ? null : { since: first },
    };
  }

  /** The warm page, or undefined (not all cached, or the caches' store down: the steps then run). */
  async #readWarm(
    userId: bigint,
    q: { beforeId: bigint | undefined; sinceId: bigint | undefined; limit: number; window: number },
  ) {
    if (!this.#o.warm) return undefined;
    try {
      return await this.#o.warm.read(userId, { ...q, line: this.#o.thresholds().activePushMax });
    } catch (error) {
      if (this.#o.isListStoreDown?.(error)) return undefined;
      throw error;
    }
  }

  /**
   * The user's list; when the store is down (`isListStoreDown`), a pull bounded like a rebuild
   * (count and age, within the rebuild cap) that writes nothing, marked `degraded`.
   */
  async #readList(
    userId: bigint,
    query: { beforeId: bigint | undefined; sinceId: bigint | undefined; limit: number },
  ): Promise<{ state: string; ids: bigint[] }> {
    try {
      return await this.#o.timelines.read(userId, query);
    } catch (error) {
      if (!this.#o.isListStoreDown?.(error) || this.#rebuildsInFlight >= this.#o.maxRebuilds) throw error;
      this.#rebuildsInFlight++;
      try {
        const sinceMs = this.#o.clock.nowMs() - this.#o.rebuildMaxAgeMs;
        const entries = await this.#o.posts.pullForRebuild(userId, { sinceMs, limit: this.#o.cap });
        this.#o.onRebuild?.("degraded", entries.length);
        return { state: "degraded", ids: entries.map((e) => e.id) };
      } finally {
        this.#rebuildsInFlight--;
      }
    }
  }

  /** Content of the first `limit` candidates that are live and not hidden, in one query per round. */
  async #fetchPage(
    candidates: readonly bigint[],
    hidden: ReadonlySet<bigint>,
    limit: number,
  ): Promise<Post[]> {
    const page: Post[] = [];
    let next = 0;
    for (
      let round = 0;
      round < MAX_FETCH_ROUNDS && page.length < limit && next < candidates.length;
      round++
    ) {
      const chunk = candidates.slice(next, next + (limit - page.length) * 2);
      next += chunk.length;
      const found = await this.#o.posts.postsByIds(chunk);
      for (const id of chunk) {
        const post = found.get(id);
        if (post && !hidden.has(post.authorId) && page.length < limit) page.push(post);
      }
    }
    return page;
  }

  /**
   * FD-19: one rebuild per user at a time (the lock), few per process (the cap). Undefined
   * when this request did not rebuild: the caller answers with what exists (206).
   */
  async #rebuild(userId: bigint): Promise<TimelineEntry[] | undefined> {
    if (this.#rebuildsInFlight >= this.#o.maxRebuilds) {
      this.#o.onRebuild?.("capped", 0);
      return undefined;
    }
    this.#rebuildsInFlight++;
    const owner = this.#o.newOwner();
    try {
      if (!(await this.#o.timelines.beginRebuild(userId, owner))) {
        this.#o.onRebuild?.("locked", 0);
        return undefined;
      }
      try {
        const sinceMs = this.#o.clock.nowMs() - this.#o.rebuildMaxAgeMs;
        const entries = await this.#o.posts.pullForRebuild(userId, { sinceMs, limit: this.#o.cap });
        const filled = await this.#o.timelines.fillRebuild(userId, owner, entries);
        this.#o.onRebuild?.(filled ? "rebuilt" : "lost", entries.length);
        return entries;
      } finally {
        await this.#o.timelines.endRebuild(userId, owner);
      }
    } finally {
      this.#rebuildsInFlight--;
    }
  }
}

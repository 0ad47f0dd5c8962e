/**
 * What the feed's mechanisms need from their stores, as interfaces: the domain calls these
 * and never speaks SQL or Redis (ARCHITECTURE rule 1). `store/` implements them.
 */

/** One post as the API shows it; `deleted` posts never leave the store (FD-21). */
export interface Post {
  readonly id: bigint;
  readonly authorId: bigint;
  readonly kind: "post" | "repost";
  readonly text: string | null;
  readonly repostOf: bigint | null;
  readonly createdAtMs: number;
  readonly editedAtMs: number | null;
}

/** A timeline entry: a post id and its time (the sorted set's score, FD-11). */
export interface TimelineEntry {
  readonly id: bigint;
  readonly atMs: number;
}

export type TimelineState = "missing" | "ready" | "rebuilding";

export interface TimelineWindow {
  /** Newest first, at most `limit`, all strictly below `beforeId` / above `sinceId` when given. */
  readonly ids: bigint[];
  readonly state: TimelineState;
}

/** The home timelines (Redis sorted sets, or the in-process twin): ids only (FD-10). */
export interface TimelinePort {
  read(
    userId: bigint,
    range: { beforeId?: bigint; sinceId?: bigint; limit: number },
  ): Promise<TimelineWindow>;
  /** Takes the user's rebuild lock (SET NX PX) and creates the empty list; false when another holds it. */
  beginRebuild(userId: bigint, owner: string): Promise<boolean>;
  /** Writes the pulled entries (fenced by the lock); false when the lock is no longer this owner's. */
  fillRebuild(userId: bigint, owner: string, entries: readonly TimelineEntry[]): Promise<boolean>;
  /** Releases the lock if this owner still holds it. */
  endRebuild(userId: bigint, owner: string): Promise<void>;
}

/** The post store's read side (PostgreSQL / PGlite). */
export interface PostReader {
  /** Live (not deleted) posts of `ids`, in one query; missing and deleted ones are absent. */
  postsByIds(ids: readonly bigint[]): Promise<Map<bigint, Post>>;
  /** An author's newest live post entries (FD-13's index range), below `beforeId` when given. */
  recentOf(authorId: bigint, range: { beforeId?: bigint; limit: number }): Promise<TimelineEntry[]>;
  /** FD-19/20's bounded pull: newest entries of the authors `userId` follows, newer than `sinceMs`. */
  pullForRebuild(userId: bigint, bound: { sinceMs: number; limit: number }): Promise<TimelineEntry[]>;
}

/** What a home-feed read needs from the graph about its reader. */
export interface ReaderView {
  /** Followees in the pull tier (follower count above the line), bounded (FD-13: "a few dozen"). */
  readonly pulled: bigint[];
  /** Authors the reader muted or blocked (filtered at read). */
  readonly hidden: Set<bigint>;
}

/** The graph's read side. */
export interface GraphReader {
  /** The reader's pulled followees (follower count above `minFollowers`) and hidden authors, in one round trip. */
  readerView(userId: bigint, minFollowers: number): Promise<ReaderView>;
}

/** What a warm read is asked: the page, the candidates per source, the tier line pulled above. */
export interface WarmRequest {
  readonly beforeId?: bigint;
  readonly sinceId?: bigint;
  readonly limit: number;
  readonly window: number;
  readonly line: number;
}

/** A page served wholly from the caches. */
export interface WarmPage {
  /** Decoded when first read: the API answers with `rendered` and never asks. */
  readonly posts: Post[];
  /** The same posts as the API writes them, joined by commas: the cached bodies as they are, never decoded. */
  readonly rendered: string;
  /** How many posts the page holds. */
  readonly count: number;
  /** The first and the last post's ids (the page's cursors), undefined when the page is empty. */
  readonly firstId: bigint | undefined;
  readonly lastId: bigint | undefined;
  /** Ids the list gave (at most the window): a full window means older pages may follow. */
  readonly listCount: number;
  readonly state: "ready" | "rebuilding";
}

/** The warm read: one round trip to the caches; undefined when anything it needs is not cached. */
export interface WarmReader {
  read(userId: bigint, request: WarmRequest): Promise<WarmPage | undefined>;
}

/** What the fan-out reads from the graph. */
export interface FanoutGraph {
  followerCount(accountId: bigint): Promise<number>;
  /** A page of followers after `afterId` (keyset), only the active ones when `activeSinceMs` is given. */
  followersPage(
    followeeId: bigint,
    page: { afterId: bigint; limit: number; activeSinceMs?: number },
  ): Promise<bigint[]>;
}

/** What the fan-out writes into the timelines. */
export interface FanoutTimelines {
  /** One id into many lists, batched and pipelined (FD-16); resolves to lists written. */
  pushMany(followerIds: readonly bigint[], entry: TimelineEntry): Promise<number>;
  mergeInto(userId: bigint, entries: readonly TimelineEntry[]): Promise<void>;
  remove(userId: bigint, ids: readonly bigint[]): Promise<number>;
}

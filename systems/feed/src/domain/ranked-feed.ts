/**
 * FD-22's ranked home feed: the hybrid read gathers up to `candidates` live posts (mutes,
 * blocks and deletes already filtered), the ranking stage orders them (ranking.ts), and the
 * order is stored per session; pages are positions in that stored ranking, so the cursor is
 * (session, position) — the id cursor no longer applies. An expired session's cursor is
 * refused naming `cursor` (drop it for a fresh ranking).
 *
 * @example
 * const page = await ranked.read(42n, { limit: 20 }); // { posts, nextCursor: { session, offset: 20 } }
 */
import type { Clock } from "@casebook/kit/clock";
import { decodeSnowflake } from "@casebook/kit/snowflake";
import { errors } from "../errors.ts";
import type { RankedCursor } from "./feed-cursor.ts";
import type { HomeFeed } from "./home-feed.ts";
import type { Post, PostReader } from "./ports.ts";
import { MAX_CANDIDATES, rankCandidates } from "./ranking.ts";

export interface RankingPort {
  saveRanking(userId: bigint, session: string, ids: readonly bigint[], ttlMs: number): Promise<void>;
  rankingPage(userId: bigint, session: string, offset: number, limit: number): Promise<bigint[] | undefined>;
}

export interface RankedFeedOptions {
  readonly feed: HomeFeed;
  readonly rankings: RankingPort;
  readonly posts: Pick<PostReader, "postsByIds">;
  readonly clock: Clock;
  readonly newSession: () => string;
  /** Candidates ranked per session (FD-22: a few hundred). */
  readonly candidates: number;
  readonly sessionTtlMs: number;
  readonly halfLifeMs: number;
}

export interface RankedPage {
  readonly posts: Post[];
  readonly nextCursor: RankedCursor | null;
  readonly partial: boolean;
}

export class RankedFeed {
  readonly #o: RankedFeedOptions;

  constructor(options: RankedFeedOptions) {
    if (!(options.candidates >= 1 && options.candidates <= MAX_CANDIDATES))
      throw new RangeError("candidates out of range");
    this.#o = options;
  }

  async read(userId: bigint, query: { cursor?: RankedCursor; limit: number }): Promise<RankedPage> {
    const { cursor, limit } = query;
    if (cursor === undefined) return this.#fresh(userId, limit);
    const ids = await this.#o.rankings.rankingPage(userId, cursor.session, cursor.offset, limit);
    if (ids === undefined)
      throw errors.create("FEED_CURSOR_INVALID", {
        detail: "This ranking session expired; drop the cursor for a fresh ranking.",
        fields: { field: "cursor" },
      });
    const found = await this.#o.posts.postsByIds(ids);
    const posts = ids.flatMap((id) => found.get(id) ?? []);
    const next = ids.length === limit ? { session: cursor.session, offset: cursor.offset + limit } : null;
    return { posts, nextCursor: next, partial: false };
  }

  async #fresh(userId: bigint, limit: number): Promise<RankedPage> {
    const gathered = await this.#o.feed.read(userId, { limit: this.#o.candidates });
    const ranked = rankCandidates(
      gathered.posts.map((p) => ({
        id: p.id,
        authorId: p.authorId,
        kind: p.kind,
        atMs: decodeSnowflake(p.id).timestampMs,
      })),
      { nowMs: this.#o.clock.nowMs(), halfLifeMs: this.#o.halfLifeMs },
    );
    const session = this.#o.newSession();
    await this.#o.rankings.saveRanking(userId, session, ranked, this.#o.sessionTtlMs);
    const byId = new Map(gathered.posts.map((p) => [p.id, p]));
    const posts = ranked.slice(0, limit).map((id) => byId.get(id)!);
    return {
      posts,
      nextCursor: ranked.length > limit ? { session, offset: limit } : null,
      partial: gathered.partial,
    };
  }
}

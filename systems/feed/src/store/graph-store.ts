/**
 * The social graph (FD-16): `follows` keyed by (followee, follower) — the fan-out reads an
 * author's followers as one index range, page by page — with a second index by follower for
 * the read side; each account's follower count kept in the same transaction as the edge, so
 * the tier decision (tiers.ts) reads one row. A follow or unfollow also enqueues its event:
 * the fan-out worker merges the followee's recent posts into the follower's list, or takes
 * them out (as Mastodon's FeedManager does).
 *
 * @example
 * const graph = new GraphStore(db);
 * await graph.follow(1n, 2n, { nowMs, eventId: "follow:1" }); // 1 now follows 2: 2's follower count
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { GraphReader, ReaderView } from "../domain/ports.ts";
import { enqueueFanout } from "./fanout-outbox.ts";

/** Bound on celebrities one read pulls from (FD-13: "typically a few dozen"). */
export const MAX_PULLED_FOLLOWEES = 100;

export class GraphStore implements GraphReader {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * The followee's follower count after the follow, undefined when the edge existed already.
   * The follower count and the merge event commit with it; the count tells the caller whether
   * the followee crossed the tier line (their followers' cached views then change).
   */
  async follow(
    followerId: bigint,
    followeeId: bigint,
    at: { nowMs: number; eventId: string },
  ): Promise<number | undefined> {
    return this.#db.transaction(async (tx) => {
      await tx.query("INSERT INTO accounts (id) VALUES ($1), ($2) ON CONFLICT (id) DO NOTHING", [
        followerId,
        followeeId,
      ]);
      const { rowCount } = await tx.query(
        `INSERT INTO follows (followee_id, follower_id, created_at) VALUES ($1, $2, $3)
         ON CONFLICT (followee_id, follower_id) DO NOTHING`,
        [followeeId, followerId, new Date(at.nowMs)],
      );
      if (rowCount === 0) return undefined;
      const { rows } = await tx.query<{ follower_count: number }>(
        "UPDATE accounts SET follower_count = follower_count + 1 WHERE id = $1 RETURNING follower_count",
        [followeeId],
      );
      await enqueueFanout(
        tx,
        { kind: "follow", actorId: followerId, targetId: followeeId, eventId: at.eventId },
        at.nowMs,
      );
      return rows[0]!.follower_count;
    });
  }

  /** The followee's follower count after the unfollow, undefined when there was no edge. */
  async unfollow(
    followerId: bigint,
    followeeId: bigint,
    at: { nowMs: number; eventId: string },
  ): Promise<number | undefined> {
    return this.#db.transaction(async (tx) => {
      const { rowCount } = await tx.query("DELETE FROM follows WHERE followee_id = $1 AND follower_id = $2", [
        followeeId,
        followerId,
      ]);
      if (rowCount === 0) return undefined;
      const { rows } = await tx.query<{ follower_count: number }>(
        "UPDATE accounts SET follower_count = follower_count - 1 WHERE id = $1 RETURNING follower_count",
        [followeeId],
      );
      await enqueueFanout(
        tx,
        { kind: "unfollow", actorId: followerId, targetId: followeeId, eventId: at.eventId },
        at.nowMs,
      );
      return rows[0]!.follower_count;
    });
  }

  async isFollowing(followerId: bigint, followeeId: bigint): Promise<boolean> {
    const { rows } = await this.#db.query(
      "SELECT 1 FROM follows WHERE followee_id = $1 AND follower_id = $2",
      [followeeId, followerId],
    );
    return rows.length === 1;
  }

  async followerCount(accountId: bigint): Promise<number> {
    const { rows } = await this.#db.query<{ follower_count: number }>(
      "SELECT follower_count FROM accounts WHERE id = $1",
      [accountId],
    );
    return rows[0]?.follower_count ?? 0;
  }

  /**
   * FD-16: one page of an author's followers after `afterId` (keyset, never OFFSET), only
   * those active since `activeSinceMs` when given (the push-active tier).
   */
  async followersPage(
    followeeId: bigint,
    page: { afterId: bigint; limit: number; activeSinceMs?: number },
  ): Promise<bigint[]> {
    const { rows } =
      page.activeSinceMs === undefined
        ? await this.#db.query<{ id: bigint }>(
            `SELECT follower_id AS id FROM follows WHERE followee_id = $1 AND follower_id > $2
              ORDER BY follower_id LIMIT $3`,
            [followeeId, page.afterId, page.limit],
            { name: "feed_followers_page" },
          )
        : await this.#db.query<{ id: bigint }>(
            `SELECT f.follower_id AS id FROM follows f JOIN accounts a ON a.id = f.follower_id
              WHERE f.followee_id = $1 AND f.follower_id > $2 AND a.last_active_at >= $4
              ORDER BY f.follower_id LIMIT $3`,
            [followeeId, page.afterId, page.limit, new Date(page.activeSinceMs)],
            { name: "feed_active_followers_page" },
          );
    return rows.map((row) => row.id);
  }

  /**
   * A home-feed read's one graph query: the reader's followees in the pull tier (a join with
   * their follower counts, bounded by MAX_PULLED_FOLLOWEES) and the authors they muted or
   * blocked, as one UNION ALL — one round trip instead of two on every read.
   */
  async readerView(userId: bigint, minFollowers: number): Promise<ReaderView> {
    const { rows } = await this.#db.query<{ id: bigint; hidden: boolean }>(
      `(SELECT f.followee_id AS id, false AS hidden FROM follows f JOIN accounts a ON a.id = f.followee_id
         WHERE f.follower_id = $1 AND a.follower_count > $2::int8 LIMIT $3)
       UNION ALL
       SELECT target_id AS id, true AS hidden FROM hidden_authors WHERE user_id = $1`,
      [userId, minFollowers, MAX_PULLED_FOLLOWEES],
      { name: "feed_reader_view" },
    );
    const pulled: bigint[] = [];
    const hidden = new Set<bigint>();
    for (const row of rows) {
      if (row.hidden) hidden.add(row.id);
      else pulled.push(row.id);
    }
    return { pulled, hidden };
  }

  async hide(userId: bigint, targetId: bigint, kind: "mute" | "block"): Promise<void> {
    await this.#db.transaction(async (tx) => {
      await tx.query("INSERT INTO accounts (id) VALUES ($1), ($2) ON CONFLICT (id) DO NOTHING", [
        userId,
        targetId,
      ]);
      await tx.query(
        `INSERT INTO hidden_authors (user_id, target_id, kind) VALUES ($1, $2, $3)
         ON CONFLICT (user_id, target_id) DO UPDATE SET kind = EXCLUDED.kind`,
        [userId, targetId, kind],
      );
    });
  }

  async unhide(userId: bigint, targetId: bigint): Promise<void> {
    await this.#db.query("DELETE FROM hidden_authors WHERE user_id = $1 AND target_id = $2", [
      userId,
      targetId,
    ]);
  }

  /** Marks a feed open (the push-active tier's "active"); the caller throttles it. */
  async touchActive(userId: bigint, nowMs: number): Promise<void> {
    await this.#db.query(
      `INSERT INTO accounts (id, last_active_at) VALUES ($1, $2)
       ON CONFLICT (id) DO UPDATE SET last_active_at = EXCLUDED.last_active_at`,
      [userId, new Date(nowMs)],
    );
  }
}

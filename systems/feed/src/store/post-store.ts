/**
 * The post store (FD-09/21): posts keyed by (author, Snowflake id), written durably with
 * their fan-out event in one transaction; delete and edit change the one row, and every read
 * filters deleted rows — nobody chases the copies of an id in the lists. Content is fetched
 * for a whole page in one query (FD-10/14).
 *
 * @example
 * const posts = new PostStore(db);
 * await posts.create({ id, authorId: 7n, text: "hello", nowMs });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { DEFAULT_SNOWFLAKE_EPOCH_MS, decodeSnowflake, snowflakeFloor } from "@casebook/kit/snowflake";
import type { Post, PostReader, TimelineEntry } from "../domain/ports.ts";
import { enqueueFanout } from "./fanout-outbox.ts";

interface PostRow {
  id: bigint;
  author_id: bigint;
  kind: "post" | "repost";
  body: string | null;
  repost_of: bigint | null;
  created_at: Date;
  edited_at: Date | null;
  version: number;
}

/** A post with its row's version (bumped by every edit and delete): what the body cache orders by. */
export interface VersionedPost extends Post {
  readonly version: number;
}

/** A row as the body cache stores it: the live post, or null once deleted, with its version. */
export interface CachedRow {
  readonly version: number;
  readonly post: Post | null;
}

/** Bound on the followees one rebuild pulls from (FD-18: "a bound on the rebuild"). */
export const MAX_REBUILD_FOLLOWEES = 2_000;

function toPost(row: PostRow): Post {
  return {
    id: row.id,
    authorId: row.author_id,
    kind: row.kind,
    text: row.body,
    repostOf: row.repost_of,
    createdAtMs: row.created_at.getTime(),
    editedAtMs: row.edited_at?.getTime() ?? null,
  };
}

export const entryOf = (id: bigint): TimelineEntry => ({ id, atMs: decodeSnowflake(id).timestampMs });

export class PostStore implements PostReader {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /** FD-09: the post row and its fan-out event commit together, before the API answers. */
  async create(
    post: {
      id: bigint;
      authorId: bigint;
      text: string | null;
      repostOf?: bigint;
      nowMs: number;
    },
    alsoInTx?: (tx: Queryable, post: Post) => Promise<void>,
  ): Promise<Post> {
    return this.#db.transaction(async (tx) => {
      await tx.query("INSERT INTO accounts (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", [post.authorId]);
      const { rows } = await tx.query<PostRow>(
        `INSERT INTO posts (author_id, id, kind, body, repost_of, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
        [
          post.authorId,
          post.id,
          post.repostOf === undefined ? "post" : "repost",
          post.text,
          post.repostOf ?? null,
          new Date(post.nowMs),
        ],
      );
      await enqueueFanout(
        tx,
        { kind: "post", actorId: post.authorId, targetId: post.id, eventId: `post:${post.id}` },
        post.nowMs,
      );
      const created = toPost(rows[0]!);
      // The caller's own write that must commit with the post (an Idempotency-Key's stored answer).
      await alsoInTx?.(tx, created);
      return created;
    });
  }

  /** A live post, or undefined. */
  async get(authorId: bigint, id: bigint): Promise<Post | undefined> {
    const { rows } = await this.#db.query<PostRow>(
      "SELECT * FROM posts WHERE author_id = $1 AND id = $2 AND deleted_at IS NULL",
      [authorId, id],
    );
    return rows[0] === undefined ? undefined : toPost(rows[0]);
  }

  /**
   * FD-21: one row changes; the lists keep the id and reads filter it out. Resolves to the
   * row's new version, undefined when there was no live post to delete.
   */
  async delete(authorId: bigint, id: bigint, nowMs: number): Promise<number | undefined> {
    const { rows } = await this.#db.query<{ version: number }>(
      `UPDATE posts SET deleted_at = $3, version = version + 1
        WHERE author_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING version`,
      [authorId, id, new Date(nowMs)],
    );
    return rows[0]?.version;
  }

  /** FD-21: an edit is one row too; every feed shows it at its next read. */
  async edit(authorId: bigint, id: bigint, text: string, nowMs: number): Promise<VersionedPost | undefined> {
    const { rows } = await this.#db.query<PostRow>(
      `UPDATE posts SET body = $3, edited_at = $4, version = version + 1
        WHERE author_id = $1 AND id = $2 AND deleted_at IS NULL AND kind = 'post' RETURNING *`,
      [authorId, id, text, new Date(nowMs)],
    );
    return rows[0] === undefined ? undefined : { ...toPost(rows[0]), version: rows[0].version };
  }

  /** The rows of `ids` for the body cache, deleted ones included (as null): one query. */
  async cachedRows(ids: readonly bigint[]): Promise<Map<bigint, CachedRow>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.#db.query<PostRow & { deleted: boolean }>(
      "SELECT *, deleted_at IS NOT NULL AS deleted FROM posts WHERE id = ANY($1::int8[])",
      [ids.map(String)],
      { name: "feed_cached_rows" },
    );
    return new Map(
      rows.map((row) => [row.id, { version: row.version, post: row.deleted ? null : toPost(row) }]),
    );
  }

  async postsByIds(ids: readonly bigint[]): Promise<Map<bigint, Post>> {
    if (ids.length === 0) return new Map();
    const { rows } = await this.#db.query<PostRow>(
      "SELECT * FROM posts WHERE id = ANY($1::int8[]) AND deleted_at IS NULL",
      [ids.map(String)],
      { name: "feed_posts_by_ids" },
    );
    return new Map(rows.map((row) => [row.id, toPost(row)]));
  }

  async recentOf(authorId: bigint, range: { beforeId?: bigint; limit: number }): Promise<TimelineEntry[]> {
    const { rows } = await this.#db.query<{ id: bigint }>(
      `SELECT id FROM posts WHERE author_id = $1 AND id < $2 AND deleted_at IS NULL
        ORDER BY id DESC LIMIT $3`,
      [authorId, range.beforeId ?? 0x7fff_ffff_ffff_ffffn, range.limit],
      { name: "feed_recent_of" },
    );
    return rows.map((row) => entryOf(row.id));
  }

  /** An author's live posts, newest first (the public author feed). */
  async authorPage(authorId: bigint, range: { beforeId?: bigint; limit: number }): Promise<Post[]> {
    const { rows } = await this.#db.query<PostRow>(
      `SELECT * FROM posts WHERE author_id = $1 AND id < $2 AND deleted_at IS NULL ORDER BY id DESC LIMIT $3`,
      [authorId, range.beforeId ?? 0x7fff_ffff_ffff_ffffn, range.limit],
    );
    return rows.map(toPost);
  }

  async pullForRebuild(userId: bigint, bound: { sinceMs: number; limit: number }): Promise<TimelineEntry[]> {
    const { rows } = await this.#db.query<{ id: bigint }>(
      `SELECT p.id FROM (SELECT followee_id FROM follows WHERE follower_id = $1 LIMIT $4) f
         CROSS JOIN LATERAL (
           SELECT id FROM posts
            WHERE author_id = f.followee_id AND id >= $2 AND deleted_at IS NULL
            ORDER BY id DESC LIMIT $3) p
        ORDER BY p.id DESC LIMIT $3`,
      [
        userId,
        snowflakeFloor(Math.max(bound.sinceMs, DEFAULT_SNOWFLAKE_EPOCH_MS)),
        bound.limit,
        MAX_REBUILD_FOLLOWEES,
      ],
    );
    return rows.map((row) => entryOf(row.id));
  }
}

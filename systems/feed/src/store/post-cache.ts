/**
 * The post bodies the home feed shows, cached in Redis (or the in-process twin) by post id —
 * `pa:{id}` = "version|author|json", or "version|-" once deleted — so a warm read fetches its
 * page's content without the database (FD-10/14). It is the post store's read side for the
 * feed: misses are read from the database in one query (deleted rows included) and filled.
 *
 * FD-21 holds through it, races included:
 * - a miss takes a lease (memcache's leases: the key holds "L<token>"), and its fill lands only
 *   where the key still holds that lease — an edit, a delete, an eviction or another fill in
 *   between took it, and the body read from the database, possibly older, is dropped;
 * - an edit or delete first marks the body "being edited" (`post-dirty`: reads ask the
 *   database, leases are gone), commits, then writes its committed body or tombstone
 *   (`post-write`), ordered by the row's version so an older write never wins;
 * - when the edit's own write is lost (Redis unreachable after the commit) the marker stays
 *   until it expires (`markerMs`), and reads ask the database meanwhile; a fill after that
 *   needs a lease taken after the marker expired, so it read the committed row.
 * A Redis that is unreachable on the read side (`isStoreDown`) makes reads ask the database.
 *
 * @example
 * const bodies = new PostCache(runner, posts, { ttlMs: 86_400_000, markerMs: 60_000, leaseMs: 10_000 });
 * await bodies.postsByIds([1n, 2n]); // from the cache, the misses from the database
 * await bodies.beginChange(1n); const v = await posts.delete(7n, 1n, nowMs); await bodies.changed(1n, v!, null);
 */
import { randomBytes } from "node:crypto";
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import type { Post, PostReader, TimelineEntry } from "../domain/ports.ts";
import { type PostJson, postOfJson, toPostJson } from "../domain/post-json.ts";
import type { CachedRow, PostStore } from "./post-store.ts";

export interface PostCacheOptions {
  /** How long a cached body (or tombstone) is kept. */
  readonly ttlMs: number;
  /** How long an edit's "being edited" marker lives when the edit's own write is lost. */
  readonly markerMs: number;
  /** How long a miss's lease lasts: a fill after it is refused (the next miss takes a new one). */
  readonly leaseMs: number;
  /** True for an error meaning Redis is unreachable: the read then asks the database. */
  readonly isStoreDown?: (error: unknown) => boolean;
}

export const postBodyKey = (id: bigint): string => `pa:{${id}}`;

/**
 * The cached form of a row: "version|author|json" live, "version|-" deleted. The JSON is the
 * post as the API writes it (domain/post-json.ts's `toPostJson`: the same keys in the same order,
 * times in ISO 8601), so a warm page is the cached bodies joined as they are — in the
 * `home-read` script itself — and the service neither decodes nor renders them (issue 20). The
 * key is `pa:` ("post as the API writes it"): bodies of the former form (`pb:`, times in ms)
 * are never read as this one.
 */
export function encodeBody(row: CachedRow): string {
  if (row.post === null) return `${row.version}|-`;
  return `${row.version}|${row.post.authorId}|${JSON.stringify(toPostJson(row.post))}`;
}

/** A cached body's JSON (the part after "version|author|", the API's form) back to a post. */
export function decodeBodyJson(json: string): Post {
  return postOfJson(JSON.parse(json) as PostJson);
}

const LIVE = /^\d+\|\d+\|(.*)$/s;

/** What the cache reads from the post store. */
export type PostRows = Pick<PostStore, "postsByIds" | "cachedRows" | "recentOf" | "pullForRebuild">;

export class PostCache implements PostReader {
  readonly #runner: ScriptRunner;
  readonly #posts: PostRows;
  readonly #o: PostCacheOptions;

  constructor(runner: ScriptRunner, posts: PostRows, options: PostCacheOptions) {
    this.#runner = runner;
    this.#posts = posts;
    this.#o = options;
  }

  /** Live posts of `ids` (deleted and unknown ones absent): one Redis round trip, plus one query for the misses. */
  async postsByIds(ids: readonly bigint[]): Promise<Map<bigint, Post>> {
    if (ids.length === 0) return new Map();
    const token = randomBytes(9).toString("base64url");
    let values: string[];
    try {
      values = (await this.#runner.run("post-bodies", ids.map(postBodyKey), [
        token,
        this.#o.leaseMs,
      ])) as string[];
    } catch (error) {
      if (this.#o.isStoreDown?.(error)) return this.#posts.postsByIds(ids);
      throw error;
    }
    const found = new Map<bigint, Post>();
    const misses: bigint[] = [];
    const leased = new Set<bigint>();
    ids.forEach((id, i) => {
      const value = values[i] ?? "";
      if (value === "") leased.add(id);
      if (!/^\d/.test(value))
        misses.push(id); // not cached, being edited, or another's lease
      else {
        const json = LIVE.exec(value)?.[1];
        if (json !== undefined) found.set(id, decodeBodyJson(json));
      }
    });
    if (misses.length === 0) return found;
    const rows = await this.#posts.cachedRows(misses);
    const keys: string[] = [];
    const fills: string[] = [];
    for (const id of misses) {
      const row = rows.get(id);
      if (row === undefined) continue;
      if (row.post !== null) found.set(id, row.post);
      // Only where this read holds the lease: a marker or another reader's lease is left alone.
      if (leased.has(id)) {
        keys.push(postBodyKey(id));
        fills.push(encodeBody(row));
      }
    }
    if (keys.length > 0)
      // A failed fill costs only the next read's miss.
      await this.#runner.run("post-fill", keys, [token, this.#o.ttlMs, ...fills]).catch(() => 0);
    return found;
  }

  recentOf(authorId: bigint, range: { beforeId?: bigint; limit: number }): Promise<TimelineEntry[]> {
    return this.#posts.recentOf(authorId, range);
  }

  pullForRebuild(userId: bigint, bound: { sinceMs: number; limit: number }): Promise<TimelineEntry[]> {
    return this.#posts.pullForRebuild(userId, bound);
  }

  /** Before an edit or delete commits: reads ask the database, fills are refused. Fails the change when Redis does. */
  async beginChange(id: bigint): Promise<void> {
    await this.#runner.run("post-dirty", [postBodyKey(id)], [this.#o.markerMs]);
  }

  /** After it committed: the new body (`post`) or the tombstone (null), at the row's version. */
  async changed(id: bigint, version: number, post: Post | null): Promise<void> {
    await this.#runner.run(
      "post-write",
      [postBodyKey(id)],
      [version, encodeBody({ version, post }), this.#o.ttlMs],
    );
  }
}

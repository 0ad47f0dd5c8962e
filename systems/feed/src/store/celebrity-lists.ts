/**
 * FD-13's celebrity posts, cached in Redis (or the in-process twin) for every reader and
 * every API replica at once: `cr:{author}` holds a pulled author's newest `window` ids (a
 * sorted set scored by post time, like a timeline). Written through: every post of the author
 * is added at post time and again by the fan-out (`add`: ZADD of the same id twice is one
 * entry, FD-17), so a new post shows at the next read — no TTL staleness. A list that is not
 * cached is read from the author index (one query) and filled, race-free: every `add` bumps
 * `crv:{author}`, and a fill is refused when the version moved since its miss — a fill that
 * read the database before a post committed never hides that post. The member "0" marks a list
 * that holds every post of the author since its fill (fewer than the window); once the window
 * is passed it goes, and a read below the list's oldest id asks the author index. Pages below the window
 * ask the author index directly. Deleted posts stay in the list: the body cache filters them
 * (FD-21), as it does the timelines' ids.
 *
 * @example
 * const celebrities = new CelebrityLists(runner, posts, { window: 128, ttlMs: 600_000 });
 * await celebrities.ids(7n, undefined, 40); // author 7's newest 40 ids
 * await celebrities.add(7n, { id: postId, atMs }); // at post time
 */
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import { decodeSnowflake } from "@casebook/kit/snowflake";
import type { PostReader, TimelineEntry } from "../domain/ports.ts";
import { SAME_MS_SLACK } from "./timeline-store.ts";

export interface CelebrityListsOptions {
  /** Ids kept per author (the timelines' cap). */
  readonly window: number;
  /** How long an author's list is kept once filled. */
  readonly ttlMs: number;
  /** True for an error meaning Redis is unreachable: the read then asks the author index. */
  readonly isStoreDown?: (error: unknown) => boolean;
}

/** How long a list's version outlives its writes: far beyond any fill's database read. */
const VERSION_TTL_MS = 86_400_000;

export const celebrityListKey = (authorId: bigint): string => `cr:{${authorId}}`;
export const celebrityVersionKey = (authorId: bigint): string => `crv:{${authorId}}`;

export class CelebrityLists {
  readonly #runner: ScriptRunner;
  readonly #posts: Pick<PostReader, "recentOf">;
  readonly #o: CelebrityListsOptions;

  constructor(runner: ScriptRunner, posts: Pick<PostReader, "recentOf">, options: CelebrityListsOptions) {
    this.#runner = runner;
    this.#posts = posts;
    this.#o = options;
  }

  /** Newest ids of `authorId` below `beforeId`, at most `limit`. */
  async ids(authorId: bigint, beforeId: bigint | undefined, limit: number): Promise<bigint[]> {
    const keys = [celebrityListKey(authorId), celebrityVersionKey(authorId)];
    const max = beforeId === undefined ? "+inf" : decodeSnowflake(beforeId).timestampMs;
    let reply: [number, ...(string | number)[]];
    try {
      reply = (await this.#runner.run("celebrity-read", keys, [max, limit + SAME_MS_SLACK])) as typeof reply;
    } catch (error) {
      if (!this.#o.isStoreDown?.(error)) throw error;
      return (await this.#posts.recentOf(authorId, { beforeId, limit })).map((e) => e.id);
    }
    const [state, ...rest] = reply;
    let held: bigint[];
    let truncated: boolean;
    if (state === 1) {
      const [complete, ...ids] = rest;
      held = ids.map((id) => BigInt(id));
      truncated = complete !== 1;
    } else {
      const entries = await this.#posts.recentOf(authorId, { limit: this.#o.window });
      const packed = entries.map((e) => `${e.atMs}:${e.id}`).join(",");
      // A refused or failed fill costs only the next read's miss.
      await this.#runner
        .run("celebrity-fill", keys, [String(rest[0]), this.#o.ttlMs, this.#o.window, packed])
        .catch(() => 0);
      held = entries.map((e) => e.id);
      truncated = entries.length >= this.#o.window;
    }
    const below = (beforeId === undefined ? held : held.filter((id) => id < beforeId)).slice(0, limit);
    // Past the cached window (a deep page): ask the index directly.
    if (below.length >= limit || !truncated) return below;
    const deeper = await this.#posts.recentOf(authorId, {
      beforeId: below.at(-1) ?? beforeId,
      limit: limit - below.length,
    });
    return [...below, ...deeper.map((e) => e.id)];
  }

  /** A new post of the author: into their list when it is cached; the version moves either way. */
  async add(authorId: bigint, entry: TimelineEntry): Promise<void> {
    await this.#runner.run(
      "celebrity-add",
      [celebrityListKey(authorId), celebrityVersionKey(authorId)],
      [entry.id.toString(), entry.atMs, this.#o.window, VERSION_TTL_MS],
    );
  }
}

/**
 * FD-13's cache of celebrity posts: each pulled author's newest ids, kept `ttlMs` in this
 * process. Every follower of a celebrity reads the same few ids, so one query per author per
 * TTL serves them all; a short TTL bounds how late a new celebrity post shows (the feed's
 * staleness is at most the TTL, unlike FD-24's whole-feed cache of an hour). Concurrent
 * misses for one author share one query. Bounded by `maxAuthors` (oldest entry evicted).
 *
 * @example
 * const cache = new CelebrityCache({ posts, clock, ttlMs: 2_000, window: 100, maxAuthors: 10_000 });
 * await cache.ids(7n, undefined, 50); // newest 50 ids of author 7
 */
import type { Clock } from "@casebook/kit/clock";
import type { PostReader } from "../domain/ports.ts";

export interface CelebrityCacheOptions {
  readonly posts: Pick<PostReader, "recentOf">;
  readonly clock: Clock;
  readonly ttlMs: number;
  /** Ids cached per author: the newest `window`. */
  readonly window: number;
  readonly maxAuthors: number;
}

interface Cached {
  readonly atMs: number;
  readonly ids: Promise<bigint[]>;
}

export class CelebrityCache {
  readonly #o: CelebrityCacheOptions;
  readonly #entries = new Map<bigint, Cached>();
  hits = 0;
  misses = 0;

  constructor(options: CelebrityCacheOptions) {
    this.#o = options;
  }

  /** Newest ids of `authorId` below `beforeId`, at most `limit`. */
  async ids(authorId: bigint, beforeId: bigint | undefined, limit: number): Promise<bigint[]> {
    const head = await this.#head(authorId);
    const below = beforeId === undefined ? head : head.filter((id) => id < beforeId);
    // Past the cached window (a deep page): ask the index directly.
    if (below.length >= limit || head.length < this.#o.window) return below.slice(0, limit);
    const deeper = await this.#o.posts.recentOf(authorId, {
      beforeId: below.at(-1) ?? beforeId,
      limit: limit - below.length,
    });
    return [...below, ...deeper.map((e) => e.id)];
  }

  #head(authorId: bigint): Promise<bigint[]> {
    const nowMs = this.#o.clock.nowMs();
    const cached = this.#entries.get(authorId);
    if (cached && nowMs - cached.atMs < this.#o.ttlMs) {
      this.hits++;
      return cached.ids;
    }
    this.misses++;
    const ids = this.#o.posts
      .recentOf(authorId, { limit: this.#o.window })
      .then((entries) => entries.map((e) => e.id));
    if (this.#o.ttlMs <= 0) return ids;
    this.#entries.delete(authorId);
    if (this.#entries.size >= this.#o.maxAuthors) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(authorId, { atMs: nowMs, ids });
    // A failed query is not cached: the next read asks again.
    ids.catch(() => this.#entries.get(authorId)?.ids === ids && this.#entries.delete(authorId));
    return ids;
  }
}

/**
 * The warm home-feed read in ONE Redis round trip and no database one (issue 20): the
 * `home-read` script reads the reader's list, their cached view, each pulled author's cached
 * ids and the page's cached bodies, and merges, cuts and filters them as the hybrid read does
 * (domain/home-feed.ts). When anything is not cached it answers "not warm" and the caller reads
 * the slow way (ReaderViews, CelebrityLists, PostCache), which fills what was missing.
 *
 * @example
 * const warm = new WarmHomeRead(runner, { listTtlMs, celebrities: true });
 * await warm.read(42n, { limit: 20, window: 40, line: 100_000 }); // { posts, listCount, state } or undefined
 */
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import { decodeSnowflake } from "@casebook/kit/snowflake";
import type { Post, WarmPage, WarmReader, WarmRequest } from "../domain/ports.ts";
import { type PostJson, postOfJson } from "../domain/post-json.ts";
import { VIEW_EPOCH_KEY, viewKey } from "./reader-views.ts";
import { rebuildLockKey, SAME_MS_SLACK, timelineKey } from "./timeline-store.ts";

export interface WarmHomeReadOptions {
  /** The timelines' time to live (a read keeps the list alive, as timeline-read does). */
  readonly listTtlMs: number;
  /** Whether pulled authors' ids are cached (CelebrityLists); if not, a reader who pulls anyone is never warm. */
  readonly celebrities: boolean;
}

/**
 * The script's page, its posts decoded when first read (the API sends `rendered` and never asks).
 * A class with the getter on its prototype, not an object literal with `get posts()`: V8 gives a
 * literal's getter an accessor pair in the old generation, which kept every read's reply alive
 * through each young collection (issue 20).
 */
class CachedWarmPage implements WarmPage {
  readonly rendered: string;
  readonly count: number;
  readonly firstId: bigint | undefined;
  readonly lastId: bigint | undefined;
  readonly listCount: number;
  readonly state: "ready" | "rebuilding";
  #posts: Post[] | undefined;

  constructor(page: Omit<WarmPage, "posts">) {
    this.rendered = page.rendered;
    this.count = page.count;
    this.firstId = page.firstId;
    this.lastId = page.lastId;
    this.listCount = page.listCount;
    this.state = page.state;
  }

  get posts(): Post[] {
    this.#posts ??= this.count === 0 ? [] : (JSON.parse(`[${this.rendered}]`) as PostJson[]).map(postOfJson);
    return this.#posts;
  }
}

export class WarmHomeRead implements WarmReader {
  readonly #runner: ScriptRunner;
  readonly #o: WarmHomeReadOptions;

  constructor(runner: ScriptRunner, options: WarmHomeReadOptions) {
    this.#runner = runner;
    this.#o = options;
  }

  async read(userId: bigint, q: WarmRequest): Promise<WarmPage | undefined> {
    const max = q.beforeId === undefined ? "+inf" : decodeSnowflake(q.beforeId).timestampMs;
    const min = q.sinceId === undefined ? "-inf" : decodeSnowflake(q.sinceId).timestampMs;
    const reply = (await this.#runner.run(
      "home-read",
      [timelineKey(userId), rebuildLockKey(userId), viewKey(userId), VIEW_EPOCH_KEY],
      [
        max,
        min,
        q.window + SAME_MS_SLACK,
        this.#o.listTtlMs,
        q.beforeId?.toString() ?? "",
        q.sinceId?.toString() ?? "",
        q.limit,
        q.window,
        q.line,
        this.#o.celebrities ? "1" : "0",
      ],
    )) as [number, number?, number?, number?, string?, string?, string?];
    const [served, state, listCount, count, first, last, rendered] = reply;
    if (served !== 1) return undefined;
    return new CachedWarmPage({
      rendered: rendered!,
      count: count!,
      firstId: count === 0 ? undefined : BigInt(first!),
      lastId: count === 0 ? undefined : BigInt(last!),
      listCount: listCount!,
      state: state === 2 ? "rebuilding" : "ready",
    });
  }
}

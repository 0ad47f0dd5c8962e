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

/** `home-read`'s answer: served (1 or 0), state, list count, page count, first id, last id, the bodies joined. */
type HomeReadReply = [number, number?, number?, number?, string?, string?, string?];

/**
 * The script's served page, its posts decoded when first read (the API sends `rendered` and never
 * asks). A class with the getter on its prototype, not an object literal with `get posts()`: see
 * `WarmFeedPage` in domain/home-feed.ts for why (issue 20).
 */
class CachedWarmPage implements WarmPage {
  readonly rendered: string;
  readonly count: number;
  readonly firstId: bigint | undefined;
  readonly lastId: bigint | undefined;
  readonly listCount: number;
  readonly state: "ready" | "rebuilding";
  #posts: Post[] | undefined;

  constructor([, state, listCount, count, first, last, rendered]: HomeReadReply) {
    this.rendered = rendered!;
    this.count = count!;
    this.firstId = count === 0 ? undefined : BigInt(first!);
    this.lastId = count === 0 ? undefined : BigInt(last!);
    this.listCount = listCount!;
    this.state = state === 2 ? "rebuilding" : "ready";
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
        // A "before" cursor's own millisecond may hold ids at or after it, read and dropped; the
        // newest page and a "since" read drop nothing at the top of the range (but the list's marker).
        q.window + (q.beforeId === undefined ? 1 : SAME_MS_SLACK),
        this.#o.listTtlMs,
        q.beforeId?.toString() ?? "",
        q.sinceId?.toString() ?? "",
        q.limit,
        q.window,
        q.line,
        this.#o.celebrities ? "1" : "0",
      ],
    )) as HomeReadReply;
    return reply[0] === 1 ? new CachedWarmPage(reply) : undefined;
  }
}

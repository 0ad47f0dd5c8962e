/**
 * The home timelines in Redis sorted sets (or the in-process twin): one `tl:{user}` per
 * user holding post ids only (FD-10) with the post's time as score (FD-11), capped at the
 * configured length (FD-07), plus the per-user rebuild lock `lock:rebuild:{user}` (FD-19) —
 * the same hash tag, so the two share a cluster slot and one script can touch both. The
 * member "0" marks a list that exists but may hold nothing yet (a rebuilt empty feed).
 * Every operation is a script of `scripts/` with its twin (the twin rule).
 *
 * `pushMany` is the fan-out's write path (FD-16): one `timeline-add-many` script call per
 * MAX_LISTS_PER_CALL followers, pipelined — not one round trip, nor one script, per follower.
 * That script takes keys of any slot: this store is for a standalone Redis (with its replica
 * and sentinels), as main configures it; a Redis Cluster would need the calls split by slot.
 *
 * @example
 * const timelines = new TimelineStore(runner, { cap: 128, ttlMs: 604_800_000, lockMs: 5_000 });
 * await timelines.pushMany([1n, 2n], { id: 99n, atMs: 1_700_000_000_000 });
 */
import type { ScriptCall } from "@casebook/infra/redis/script-registry";
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import { decodeSnowflake } from "@casebook/kit/snowflake";
import type { TimelineEntry, TimelinePort, TimelineState, TimelineWindow } from "../domain/ports.ts";

export const timelineScriptsDir = new URL("./scripts/", import.meta.url);

/**
 * Lists one `timeline-add-many` call writes: one script per this many followers instead of one
 * per follower; small enough that the script holds Redis for about a millisecond.
 */
export const MAX_LISTS_PER_CALL = 500;

/** Ids read beyond `limit` so that ids of the cursor's own millisecond can be filtered out. */
export const SAME_MS_SLACK = 64;
const STATES: readonly TimelineState[] = ["missing", "ready", "rebuilding"];

export interface TimelineStoreOptions {
  /** Entries kept per list (FEED_TIMELINE_CAP). */
  readonly cap: number;
  /** A list unread this long expires. */
  readonly ttlMs: number;
  /** The rebuild lock's PX (FD-19: 5 000). */
  readonly lockMs: number;
  /** Calls per pipelined batch; the runner's own bound (1 000) caps it. */
  readonly maxBatch?: number;
}

export const timelineKey = (userId: bigint): string => `tl:{${userId}}`;
export const rebuildLockKey = (userId: bigint): string => `lock:rebuild:{${userId}}`;
export const listKey = (userId: bigint): string => `tll:{${userId}}`;
export const rankingKey = (userId: bigint, session: string): string => `rank:{${userId}}:${session}`;

export class TimelineStore implements TimelinePort {
  readonly #runner: ScriptRunner;
  readonly #options: TimelineStoreOptions;
  readonly #maxBatch: number;

  constructor(runner: ScriptRunner, options: TimelineStoreOptions) {
    this.#runner = runner;
    this.#options = options;
    this.#maxBatch = Math.max(1, Math.min(options.maxBatch ?? 1_000, 1_000));
  }

  get cap(): number {
    return this.#options.cap;
  }

  async read(
    userId: bigint,
    range: { beforeId?: bigint; sinceId?: bigint; limit: number },
  ): Promise<TimelineWindow> {
    const max = range.beforeId === undefined ? "+inf" : decodeSnowflake(range.beforeId).timestampMs;
    const min = range.sinceId === undefined ? "-inf" : decodeSnowflake(range.sinceId).timestampMs;
    const reply = (await this.#runner.run(
      "timeline-read",
      [timelineKey(userId), rebuildLockKey(userId)],
      [max, min, range.limit + SAME_MS_SLACK, this.#options.ttlMs],
    )) as [number, ...string[]];
    const [state, ...members] = reply;
    const ids = members
      .map(BigInt)
      .filter((id) => id !== 0n)
      .filter(
        (id) =>
          (range.beforeId === undefined || id < range.beforeId) &&
          (range.sinceId === undefined || id > range.sinceId),
      )
      .slice(0, range.limit);
    return { ids, state: STATES[state]! };
  }

  /**
   * FD-16: one id into many followers' lists, pipelined `maxBatch` calls per round trip.
   * Resolves to how many lists took it (missing lists are skipped, not created).
   */
  async pushMany(followerIds: readonly bigint[], entry: TimelineEntry): Promise<number> {
    if (followerIds.length === 0) return 0;
    const args = [entry.id.toString(), entry.atMs, this.#options.cap];
    const calls: ScriptCall[] = [];
    for (let from = 0; from < followerIds.length; from += MAX_LISTS_PER_CALL)
      calls.push({
        name: "timeline-add-many",
        keys: followerIds.slice(from, from + MAX_LISTS_PER_CALL).map(timelineKey),
        args,
      });
    // Every pipeline goes out at once (the caller bounds how many followers it hands over):
    // they overlap instead of waiting for each other's replies.
    const batches: Promise<PromiseSettledResult<unknown>[]>[] = [];
    for (let from = 0; from < calls.length; from += this.#maxBatch)
      batches.push(this.#runner.runBatch(calls.slice(from, from + this.#maxBatch)));
    let written = 0;
    for (const result of (await Promise.all(batches)).flat()) {
      if (result.status === "rejected") throw result.reason;
      written += result.value as number;
    }
    return written;
  }

  /** A follow's merge: the followee's recent entries into an existing list (skipped when missing). */
  async mergeInto(userId: bigint, entries: readonly TimelineEntry[]): Promise<void> {
    const calls: ScriptCall[] = entries.slice(0, this.#maxBatch).map((e) => ({
      name: "timeline-add",
      keys: [timelineKey(userId)],
      args: [e.id.toString(), e.atMs, this.#options.cap],
    }));
    if (calls.length === 0) return;
    for (const result of await this.#runner.runBatch(calls))
      if (result.status === "rejected") throw result.reason;
  }

  /** An unfollow's removal: the followee's ids out of the follower's list. */
  async remove(userId: bigint, ids: readonly bigint[]): Promise<number> {
    if (ids.length === 0) return 0;
    return (await this.#runner.run("timeline-remove", [timelineKey(userId)], [ids.join(",")])) as number;
  }

  async beginRebuild(userId: bigint, owner: string): Promise<boolean> {
    const taken = await this.#runner.run(
      "rebuild-begin",
      [rebuildLockKey(userId), timelineKey(userId)],
      [owner, this.#options.lockMs, this.#options.ttlMs],
    );
    return taken === 1;
  }

  async fillRebuild(userId: bigint, owner: string, entries: readonly TimelineEntry[]): Promise<boolean> {
    const packed = entries.map((e) => `${e.atMs}:${e.id}`).join(",");
    const size = await this.#runner.run(
      "timeline-fill",
      [timelineKey(userId), rebuildLockKey(userId)],
      [owner, this.#options.cap, this.#options.ttlMs, packed],
    );
    return (size as number) >= 0;
  }

  async endRebuild(userId: bigint, owner: string): Promise<void> {
    await this.#runner.run("rebuild-end", [rebuildLockKey(userId)], [owner]);
  }

  /** FD-11/17's list variant: LPUSH + LTRIM into `tll:{user}`. */
  async listPushMany(followerIds: readonly bigint[], id: bigint): Promise<void> {
    for (let from = 0; from < followerIds.length; from += this.#maxBatch) {
      const calls: ScriptCall[] = followerIds.slice(from, from + this.#maxBatch).map((follower) => ({
        name: "list-add",
        keys: [listKey(follower)],
        args: [id.toString(), this.#options.cap],
      }));
      for (const result of await this.#runner.runBatch(calls))
        if (result.status === "rejected") throw result.reason;
    }
  }

  /** The list variant's newest ids, duplicates included (the client dedupes). */
  async listRead(userId: bigint, limit: number): Promise<bigint[]> {
    return ((await this.#runner.run("list-read", [listKey(userId)], [limit])) as string[]).map(BigInt);
  }

  /** FD-22: a session's ranked ids, kept `ttlMs`. */
  async saveRanking(userId: bigint, session: string, ids: readonly bigint[], ttlMs: number): Promise<void> {
    await this.#runner.run("ranking-save", [rankingKey(userId, session)], [ttlMs, ids.join(",")]);
  }

  /** FD-22: positions [offset, offset + limit) of a session's ranking; undefined when it expired. */
  async rankingPage(
    userId: bigint,
    session: string,
    offset: number,
    limit: number,
  ): Promise<bigint[] | undefined> {
    const [exists, ...ids] = (await this.#runner.run(
      "ranking-page",
      [rankingKey(userId, session)],
      [offset, limit],
    )) as [number, ...string[]];
    return exists === 0 ? undefined : ids.map(BigInt).filter((id) => id !== 0n);
  }
}

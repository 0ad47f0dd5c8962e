/** FD-13's short-TTL cache of celebrity posts, on a manual clock. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import type { TimelineEntry } from "../src/domain/ports.ts";
import { CelebrityCache } from "../src/store/celebrity-cache.ts";

function fakePosts(ids: bigint[]) {
  let queries = 0;
  return {
    queries: () => queries,
    recentOf: async (
      _author: bigint,
      range: { beforeId?: bigint; limit: number },
    ): Promise<TimelineEntry[]> => {
      queries++;
      await new Promise((resolve) => setImmediate(resolve));
      return ids
        .filter((id) => range.beforeId === undefined || id < range.beforeId)
        .slice(0, range.limit)
        .map((id) => ({ id, atMs: 0 }));
    },
  };
}

test("FD-13 one query per celebrity per TTL serves every reader; concurrent misses share it; after the TTL a new post shows", async () => {
  const clock = new ManualClock(0);
  const ids = [30n, 20n, 10n];
  const posts = fakePosts(ids);
  const cache = new CelebrityCache({ posts, clock, ttlMs: 2_000, window: 10, maxAuthors: 100 });
  const reads = await Promise.all(Array.from({ length: 50 }, () => cache.ids(7n, undefined, 2)));
  for (const r of reads) assert.deepEqual(r, [30n, 20n]);
  assert.equal(posts.queries(), 1);
  ids.unshift(40n);
  clock.advance(1_999);
  assert.deepEqual(await cache.ids(7n, undefined, 2), [30n, 20n], "stale for at most the TTL");
  clock.advance(2);
  assert.deepEqual(await cache.ids(7n, undefined, 2), [40n, 30n]);
  assert.equal(posts.queries(), 2);
});

test("FD-13 a page below the cached window asks the author index directly; the cache stays bounded", async () => {
  const clock = new ManualClock(0);
  const posts = fakePosts([50n, 40n, 30n, 20n, 10n]);
  const cache = new CelebrityCache({ posts, clock, ttlMs: 2_000, window: 2, maxAuthors: 1 });
  assert.deepEqual(await cache.ids(7n, 40n, 3), [30n, 20n, 10n]);
  await cache.ids(8n, undefined, 1); // evicts author 7
  const before = posts.queries();
  await cache.ids(7n, undefined, 1);
  assert.equal(posts.queries(), before + 1);
});

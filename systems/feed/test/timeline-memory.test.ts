/**
 * FD-12 measured: bytes per timeline entry on the real Redis (MEMORY USAGE), on both sides of
 * `zset-max-listpack-entries` (128 by default). The text's "~20 B per entry" holds only in the
 * compact listpack encoding; one entry past the limit the set becomes a skiplist + hash table
 * at several times the bytes. FEED_TIMELINE_CAP's default (128) is chosen from this.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { listMemoryBytes } from "../src/domain/estimates.ts";

test("FD-12 bytes per entry measured: ~20 B holds up to 128 entries (listpack); above, a skiplist costs several times more; 800 entries × 100M users is far above 1.6 TB", async (t) => {
  const url = await requireRedis(t);
  if (!url) return;
  const keyPrefix = `feed:${uniqueName("mem")}:`;
  const redis = await connectRedis({ url, keyPrefix, commandTimeoutMs: 5_000 });
  try {
    const [, limitText] = (await redis.config("GET", "zset-max-listpack-entries")) as [string, string];
    const limit = Number(limitText);
    const perEntry: Record<number, { encoding: string; bytes: number }> = {};
    const t0 = Date.UTC(2026, 0, 1);
    for (const n of [limit, limit + 1, 800]) {
      const key = `probe:${n}`;
      const args: (string | number)[] = [];
      for (let i = 0; i < n; i++) args.push(t0 + i * 1_000, (snowflakeFloor(t0 + i * 1_000) + 7n).toString());
      await redis.zadd(key, ...args);
      const bytes = Number(await redis.memory("USAGE", key, "SAMPLES", 0));
      const encoding = String(await redis.object("ENCODING", key));
      perEntry[n] = { encoding, bytes: bytes / n };
      await redis.del(key);
    }
    t.diagnostic(`zset-max-listpack-entries ${limit}: ${JSON.stringify(perEntry)}`);
    assert.equal(perEntry[limit]!.encoding, "listpack");
    assert.ok(perEntry[limit]!.bytes < 30, "near the text's 20 B");
    assert.equal(perEntry[limit + 1]!.encoding, "skiplist");
    assert.ok(perEntry[limit + 1]!.bytes > 3 * perEntry[limit]!.bytes, "several times the bytes");
    // The text's 1.6 TB at the measured 800-entry cost:
    const measured = listMemoryBytes(100e6, 800, perEntry[800]!.bytes);
    t.diagnostic(
      `800 entries × 100M users at ${perEntry[800]!.bytes.toFixed(0)} B = ${(measured / 1e12).toFixed(1)} TB`,
    );
    assert.ok(measured > 3 * 1.6e12);
  } finally {
    await closeRedis(redis);
  }
});

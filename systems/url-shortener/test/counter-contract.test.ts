/**
 * The shared counter's contract (US-05, US-11), one suite on every engine that can hold it:
 * PGlite in memory, the real PostgreSQL (a fresh schema), and Redis (a fresh key) when
 * REDIS_URL is configured. Each add returns the value after it; concurrent adds never
 * return the same end, so their blocks never overlap.
 */
import assert from "node:assert/strict";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { CounterPort } from "../src/domain/counter-blocks.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";
import { RedisCounter } from "../src/store/redis-counter.ts";
import { SqlCounter } from "../src/store/sql-counter.ts";

const redisBackend = {
  name: "redis",
  async open(t: { skip(message?: string): void }) {
    const url = await requireRedis(t);
    if (!url) return undefined;
    const redis = await connectRedis({ url });
    const key = uniqueName("us_counter");
    const counter = new RedisCounter(redis, key);
    await counter.start(0);
    return {
      subject: counter as CounterPort,
      close: async () => {
        await redis.del(key);
        await closeRedis(redis);
      },
    };
  },
};

contractSuite(
  "code counter",
  [
    ...sqlBackends<CounterPort>({
      system: "url-shortener",
      prefix: "us_counter",
      prepare: migrateShortenerStore,
      subject: (db) => new SqlCounter(db),
    }),
    redisBackend,
  ],
  (it) => {
    it("US-05 one add reserves a block: it returns the value after the add", async (counter) => {
      const first = await counter.reserve(1_000);
      const second = await counter.reserve(1_000);
      assert.equal(second - first, 1_000);
    });

    it("US-05 50 concurrent adds return 50 distinct ends, 1,000 apart: blocks never overlap", async (counter) => {
      const base = await counter.reserve(1);
      const ends = await Promise.all(Array.from({ length: 50 }, () => counter.reserve(1_000)));
      const sorted = [...ends].sort((a, b) => a - b);
      assert.equal(new Set(ends).size, 50);
      for (let i = 0; i < sorted.length; i++) assert.equal(sorted[i], base + (i + 1) * 1_000);
    });
  },
);

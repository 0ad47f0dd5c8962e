/**
 * FD-21 raced for real: one process edits a post back to back for 5 s and then deletes it through the body
 * cache's write path (mark, commit, write) while three other processes read it through the
 * cache as fast as they can on the same Redis and PostgreSQL — and the cached body is evicted
 * before each edit, so the readers' refills race the edits. No read that began after an edit
 * returned may show an older text; none after the delete may show the post.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, test } from "node:test";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { openPostgresTestSchema, type TestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { Redis } from "ioredis";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostCache, postBodyKey } from "../src/store/post-cache.ts";
import { PostStore } from "../src/store/post-store.ts";
import { timelineScriptsDir } from "../src/store/timeline-store.ts";

const READERS = 3;
/** Edits back to back for this long (at least MIN_EDITS): collisions grow with the time raced. */
const EDIT_MS = 5_000;
const MIN_EDITS = 250;
const prefix = `feed:${uniqueName("race")}:`;
let schema: TestSchema | undefined;
let redis: Redis | undefined;

after(async () => {
  if (redis) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.unlink(...keys.map((k) => k.slice(prefix.length)));
    await closeRedis(redis);
  }
  await schema?.drop();
});

/** Runs one reader process to its end; its JSON line. */
function reader(
  env: NodeJS.ProcessEnv,
): Promise<{ reads: number; misses: number; stale: number; samples: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [new URL("./read-cache-race-reader.ts", import.meta.url).pathname],
      {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve(JSON.parse(out.trim())) : reject(new Error(`reader exited ${code}: ${out}`)),
    );
  });
}

test("FD-21 an edited post shows its new text and a deleted one never shows, racing reads that refill the cache from three processes", async (t) => {
  const redisUrl = await requireRedis(t);
  const databaseUrl = await requirePostgres(t);
  if (!redisUrl || !databaseUrl) return;
  schema = await openPostgresTestSchema(databaseUrl, {
    system: "feed",
    prefix: "feed_race",
    prepare: migrateFeed,
  });
  redis = await connectRedis({ url: redisUrl, keyPrefix: prefix, commandTimeoutMs: 5_000 });
  const posts = new PostStore(schema.db);
  const cache = new PostCache(
    new RedisScriptRunner(redis, await ScriptRegistry.fromDir(timelineScriptsDir)),
    posts,
    {
      ttlMs: 60_000,
      markerMs: 10_000,
      leaseMs: 5_000,
    },
  );
  const [author, id] = [7n, snowflakeFloor(Date.now())];
  await posts.create({ id, authorId: author, text: "v0", nowMs: Date.now() });
  const readMs = 60_000; // a bound: each reader stops 100 reads after the delete
  const running = Array.from({ length: READERS }, () =>
    reader({
      REDIS_URL: redisUrl,
      DATABASE_URL: databaseUrl,
      RACE_SCHEMA: schema!.schema,
      RACE_PREFIX: prefix,
      RACE_POST: String(id),
      RACE_MS: String(readMs),
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 500)); // the readers connected and reading
  let k = 0;
  for (const endAt = Date.now() + EDIT_MS; Date.now() < endAt || k < MIN_EDITS; ) {
    k++;
    // Evicted, then edited at once: the readers' refills (a miss, a database read, a fill) run
    // while the edit marks, commits and writes — the race the lease must win.
    await redis.del(postBodyKey(id));
    await new Promise((resolve) => setTimeout(resolve, 1));
    await cache.beginChange(id);
    const edited = await posts.edit(author, id, `v${k}`, Date.now());
    await cache.changed(id, edited!.version, edited!);
    await redis.set("race:oracle", String(k));
  }
  await cache.beginChange(id);
  const version = await posts.delete(author, id, Date.now());
  await cache.changed(id, version!, null);
  await redis.set("race:oracle", "deleted");
  const results = await Promise.all(running);
  const total = results.reduce((sum, r) => sum + r.reads, 0);
  t.diagnostic(`${k} edits`);
  t.diagnostic(
    `reads ${total} (${results.map((r) => r.reads).join(", ")}), after the delete ${results.reduce((s, r) => s + r.misses, 0)}`,
  );
  for (const r of results) if (r.samples.length > 0) t.diagnostic(`stale: ${r.samples.join("; ")}`);
  const during = total - results.reduce((s, r) => s + r.misses, 0);
  assert.ok(during > 100 * READERS, `enough reads raced the edits: ${during}`);
  assert.ok(
    results.every((r) => r.misses > 0),
    "every reader read past the delete",
  );
  assert.deepEqual(
    results.map((r) => r.stale),
    results.map(() => 0),
    "no read showed a text older than an edit that had returned, or the post after its delete",
  );
});

/**
 * One reader process of `read-cache-race.test.ts`: reads one post through the body cache
 * (real Redis, real PostgreSQL) as fast as it can until 100 reads past the delete, and checks every read against
 * the oracle the editing process publishes AFTER each edit or delete returned — a read that
 * began after edit k returned must show version k or newer, and nothing once deleted. Prints
 * `{ reads, misses, stale, samples }` (the first stale reads) as one JSON line.
 *
 * @example
 * // REDIS_URL=… DATABASE_URL=… RACE_SCHEMA=… RACE_PREFIX=… RACE_POST=123 RACE_MS=3000 node test/read-cache-race-reader.ts
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { PostCache } from "../src/store/post-cache.ts";
import { PostStore } from "../src/store/post-store.ts";
import { timelineScriptsDir } from "../src/store/timeline-store.ts";

const env = process.env;
const id = BigInt(env.RACE_POST!);
const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
const redis = await connectRedis({
  url: env.REDIS_URL!,
  keyPrefix: env.RACE_PREFIX!,
  commandTimeoutMs: 5_000,
});
const db = await openDatabase({
  system: "feed",
  url: env.DATABASE_URL!,
  schema: env.RACE_SCHEMA!,
  pool: { maxConnections: 2 },
});
const cache = new PostCache(new RedisScriptRunner(redis, registry), new PostStore(db), {
  ttlMs: 60_000,
  markerMs: 10_000,
  leaseMs: 5_000,
});
let [reads, stale, misses] = [0, 0, 0];
const samples: string[] = [];
const endAt = Date.now() + Number(env.RACE_MS);
let afterDelete = 0;
// Until 100 reads past the delete (or RACE_MS, a bound).
while (Date.now() < endAt && afterDelete < 100) {
  const oracle = await redis.get("race:oracle"); // what had returned before this read began
  if (oracle === "deleted") afterDelete++;
  const post = (await cache.postsByIds([id])).get(id);
  reads++;
  const seen = post === undefined ? "deleted" : Number(post.text!.slice(1));
  if (seen === "deleted") misses++;
  if (
    oracle === "deleted" ? seen !== "deleted" : oracle !== null && seen !== "deleted" && seen < Number(oracle) // "deleted" is newer: a delete in flight
  ) {
    stale++;
    if (samples.length < 5) samples.push(`oracle ${oracle}, seen ${seen}`);
  }
}
process.stdout.write(`${JSON.stringify({ reads, misses, stale, samples })}\n`);
await closeRedis(redis);
await db.close();

/**
 * The fan-out scenario of `casebook bench feed`: one post by an author of the seed graph
 * (seed-graph.ts, sized by `followers`) pushed to every follower's existing list through the
 * real path — follower pages from PostgreSQL, `timeline-add` scripts pipelined 1 000 per round
 * trip into Redis — and, in the same run on the same Redis, the floor: `redis-benchmark ZADD
 * -P 16` into many distinct keys. Keys live under their own prefix and are deleted after.
 *
 * @example
 * const rows = await runFanoutBench({ followers: 50_000, redisUrl, databaseUrl });
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { systemClock } from "@casebook/kit/clock";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { type BenchResult, benchRow } from "@casebook/lab/bench-report";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { uniqueName } from "@casebook/lab/test-engines";
import { Fanout } from "../src/domain/fanout.ts";
import { GraphStore } from "../src/store/graph-store.ts";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostStore } from "../src/store/post-store.ts";
import { seedGraph } from "../src/store/seed-graph.ts";
import { TimelineStore, timelineKey, timelineScriptsDir } from "../src/store/timeline-store.ts";

const SYSTEM = "feed";
const PEER = "redis-benchmark ZADD -P 16";

export interface FanoutBenchOptions {
  readonly followers: number;
  readonly redisUrl: string;
  readonly databaseUrl: string;
}

/** `redis-benchmark` ZADD into `keys` distinct keys, pipelined 16: requests per second. */
async function zaddFloor(redisUrl: string, prefix: string, requests: number): Promise<number> {
  const url = new URL(redisUrl);
  const { stdout } = await promisify(execFile)(
    "redis-benchmark",
    [
      "-h",
      url.hostname,
      "-p",
      url.port || "6379",
      "-n",
      String(requests),
      "-r",
      "100000",
      "-P",
      "16",
      "-c",
      "50",
      "-q",
      "ZADD",
      `${prefix}floor:__rand_int__`,
      "1",
      "__rand_int__",
    ],
    { timeout: 120_000 },
  );
  const match = /([\d.]+) requests per second/.exec(stdout);
  if (!match) throw new Error(`redis-benchmark printed no rate: ${stdout}`);
  return Number(match[1]);
}

export async function runFanoutBench(o: FanoutBenchOptions): Promise<BenchResult[]> {
  const prefix = `feed:${uniqueName("bench")}:`;
  const schema = await openPostgresTestSchema(o.databaseUrl, {
    system: SYSTEM,
    prefix: "feed_bench",
    prepare: migrateFeed,
  });
  const redis = await connectRedis({ url: o.redisUrl, keyPrefix: prefix, commandTimeoutMs: 30_000 });
  try {
    const users = o.followers * 2;
    await seedGraph(schema.db, {
      users,
      topShare: 0.5,
      alpha: 1,
      minFollowers: o.followers,
      activeShare: 1,
      nowMs: Date.now(),
    });
    const graph = new GraphStore(schema.db);
    const followerCount = await graph.followerCount(1n);
    // Every follower has a list (active users), as in the push tier's best case.
    for (let from = 1; from <= users; from += 1_000) {
      const pipeline = redis.pipeline();
      for (let id = from; id < Math.min(from + 1_000, users + 1); id++)
        pipeline.zadd(timelineKey(BigInt(id)), 0, "0");
      await pipeline.exec();
    }
    const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
    await registry.loadAll(redis);
    const timelines = new TimelineStore(new RedisScriptRunner(redis, registry), {
      cap: 128,
      ttlMs: 3_600_000,
      lockMs: 5_000,
    });
    const fanout = new Fanout({
      graph,
      timelines,
      posts: new PostStore(schema.db),
      clock: systemClock,
      thresholds: () => ({ fullPushMax: Number.MAX_SAFE_INTEGER, activePushMax: Number.MAX_SAFE_INTEGER }),
      activeDays: 7,
      pageSize: 1_000,
      cap: 128,
    });
    const started = performance.now();
    const result = await fanout.handle({ kind: "post", actorId: 1n, targetId: snowflakeFloor(Date.now()) });
    const seconds = (performance.now() - started) / 1000;
    const floor = await zaddFloor(o.redisUrl, prefix, Math.max(100_000, result.written));
    const scenario = `one post to ${followerCount} followers (seed graph), pages of 1 000 from PostgreSQL, pipelined timeline-add`;
    return [
      benchRow({
        system: SYSTEM,
        scenario,
        metric: "fan-out list writes",
        unit: "writes/s",
        value: result.written / seconds,
        peer: { name: PEER, value: floor },
      }),
      benchRow({
        system: SYSTEM,
        scenario,
        metric: "time until in every follower's list",
        unit: "ms",
        value: seconds * 1000,
      }),
    ];
  } finally {
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1_000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys.map((k) => k.slice(prefix.length)));
    } while (cursor !== "0");
    await closeRedis(redis);
    await schema.drop();
  }
}

/**
 * The fan-out scenario of `casebook bench feed`: one post by the seed graph's top author
 * (seed-graph.ts, sized by `followers`) pushed to every follower's existing list through the
 * real path — follower pages from PostgreSQL, one `timeline-add-many` script per 500 lists,
 * pipelined, up to 4 pages in flight — and, in the same run on the same Redis, the floor: `redis-benchmark ZADD
 * -P 16` into many distinct keys. Then the time until a post is in 99% of its followers' lists
 * (each batch's landing timed through a counting wrapper of the lists' port), for a small
 * author (1% of the top author's followers) and for the celebrity, pushed to everyone — and
 * what the hybrid does instead with the line derived from the rate just measured (FD-08:
 * capacity × the 1 s delay target): a celebrity above it is pulled at read time, no list
 * written. Keys live under their own prefix and are deleted after.
 *
 * @example
 * const rows = await runFanoutBench({ followers: 50_000, redisUrl, databaseUrl });
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { snowflakeFloor } from "@casebook/kit/snowflake";
import { type BenchResult, benchRow } from "@casebook/lab/bench-report";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { uniqueName } from "@casebook/lab/test-engines";
import { Fanout } from "../src/domain/fanout.ts";
import type { FanoutTimelines } from "../src/domain/ports.ts";
import { deriveThresholds, type Thresholds, tierOf } from "../src/domain/tiers.ts";
import { GraphStore } from "../src/store/graph-store.ts";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostStore } from "../src/store/post-store.ts";
import { seedGraph } from "../src/store/seed-graph.ts";
import { TimelineStore, timelineKey, timelineScriptsDir } from "../src/store/timeline-store.ts";
import { createDurableTimelines, DurableTimelines } from "./durable-timelines.ts";

const SYSTEM = "feed";
/** FD-08's propagation-delay target, from which the hybrid's line derives. */
const DELAY_TARGET_MS = 1_000;
/** The small author has this share of the celebrity's followers. */
const SMALL_SHARE = 0.01;
const PEER = "redis-benchmark ZADD -P 16";
/** Lines at infinity: every author pushed to every follower. */
const PUSH_ALL: Thresholds = { fullPushMax: Number.MAX_SAFE_INTEGER, activePushMax: Number.MAX_SAFE_INTEGER };

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
    prepare: async (db) => {
      await migrateFeed(db);
      await createDurableTimelines(db);
    },
  });
  const redis = await connectRedis({ url: o.redisUrl, keyPrefix: prefix, commandTimeoutMs: 30_000 });
  try {
    const users = o.followers * 2;
    await seedGraph(schema.db, {
      users,
      topShare: 0.5,
      alpha: 1,
      // Ranks 1..1/SMALL_SHARE get their edges: the celebrity and the small author among them.
      minFollowers: Math.floor(o.followers * SMALL_SHARE),
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
    const posts = new PostStore(schema.db);
    const post = (authorRank: number, thresholds: Thresholds) =>
      timedPost({ graph, timelines, posts, thresholds, authorId: BigInt(authorRank) });

    const memoryBefore = await usedMemory(redis);
    const celebrity = await post(1, PUSH_ALL);
    const listBytesPerItem = ((await usedMemory(redis)) - memoryBefore) / celebrity.written;
    const floor = await zaddFloor(o.redisUrl, prefix, Math.max(100_000, celebrity.written));
    const writesPerS = celebrity.written / (celebrity.totalMs / 1000);
    const scenario = `one post to ${followerCount} followers (seed graph), pages of 1 000 from PostgreSQL, timeline-add-many (500 lists a call), 4 pages in flight`;
    const rows = [
      benchRow({
        system: SYSTEM,
        scenario,
        metric: "fan-out list writes",
        unit: "writes/s",
        value: writesPerS,
        peer: { name: PEER, value: floor },
      }),
      benchRow({
        system: SYSTEM,
        scenario,
        metric: "time until in every follower's list",
        unit: "ms",
        value: celebrity.totalMs,
      }),
    ];
    // The small author: the rank whose followers are SMALL_SHARE of the celebrity's.
    const smallRank = Math.round(1 / SMALL_SHARE);
    const small = await post(smallRank, PUSH_ALL);
    const line = deriveThresholds({
      fanoutWritesPerS: writesPerS,
      delayTargetMs: DELAY_TARGET_MS,
      activeShare: 1,
    });
    const hybridCelebrity = await post(1, line);
    const to99 = (who: string, followers: number) =>
      `time until in 99% of the followers' lists: ${who} (${followers} followers)`;
    rows.push(
      benchRow({
        system: SYSTEM,
        scenario: `push: ${to99("small author", small.followers)}`,
        metric: "time to 99%",
        unit: "ms",
        value: small.to99Ms,
      }),
      benchRow({
        system: SYSTEM,
        scenario: `push: ${to99("celebrity", celebrity.followers)}`,
        metric: "time to 99%",
        unit: "ms",
        value: celebrity.to99Ms,
      }),
      benchRow({
        system: SYSTEM,
        scenario: `hybrid (line ${line.fullPushMax} followers = ${Math.round(writesPerS)} writes/s × ${DELAY_TARGET_MS} ms): celebrity's post, ${tierOf(celebrity.followers, line)} tier`,
        metric: "followers' lists written",
        unit: "count",
        value: hybridCelebrity.written - 1,
        direction: "lower-is-better",
      }),
      benchRow({
        system: SYSTEM,
        scenario: `hybrid: celebrity's post, ${tierOf(celebrity.followers, line)} tier`,
        metric: "time to 99% (a pulled post is in every feed at its next read)",
        unit: "ms",
        value: tierOf(celebrity.followers, line) === "pull" ? 0 : hybridCelebrity.to99Ms,
      }),
    );
    rows.push(...(await durableTimelineRows({ db: schema.db, graph, posts, celebrity, listBytesPerItem })));
    return rows;
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

interface TimedPost {
  readonly followers: number;
  /** Lists written, the author's own included. */
  readonly written: number;
  readonly totalMs: number;
  /** When 99% of the followers' lists had the id (the whole fan-out when it pushed to none). */
  readonly to99Ms: number;
}

/** One post by `authorId` fanned out, each batch's landing timed through a counting wrapper of the lists' port. */
async function timedPost(o: {
  graph: GraphStore;
  timelines: FanoutTimelines;
  posts: PostStore;
  thresholds: Thresholds;
  authorId: bigint;
}): Promise<TimedPost> {
  const followers = await o.graph.followerCount(o.authorId);
  const landed: { atMs: number; written: number }[] = [];
  let written = 0;
  let started = 0;
  const counted: FanoutTimelines = {
    pushMany: async (ids, entry) => {
      const n = await o.timelines.pushMany(ids, entry);
      written += n;
      landed.push({ atMs: performance.now() - started, written });
      return n;
    },
    mergeInto: (userId, entries) => o.timelines.mergeInto(userId, entries),
    remove: (userId, ids) => o.timelines.remove(userId, ids),
  };
  const fanout = new Fanout({
    graph: o.graph,
    timelines: counted,
    posts: o.posts,
    clock: systemClock,
    thresholds: () => o.thresholds,
    activeDays: 7,
    pageSize: 1_000,
    cap: 128,
  });
  started = performance.now();
  const result = await fanout.handle({
    kind: "post",
    actorId: o.authorId,
    targetId: snowflakeFloor(Date.now()),
  });
  const totalMs = performance.now() - started;
  // The author's own list counts in `written`: 99% of the followers is that many more.
  const target = 1 + Math.ceil(0.99 * followers);
  const to99Ms = landed.find((mark) => mark.written >= target)?.atMs ?? totalMs;
  return { followers, written: result.written, totalMs, to99Ms };
}

/** Redis's `used_memory`, bytes. */
async function usedMemory(redis: Awaited<ReturnType<typeof connectRedis>>): Promise<number> {
  const match = /used_memory:(\d+)/.exec(await redis.info("memory"));
  if (!match) throw new Error("INFO memory printed no used_memory");
  return Number(match[1]);
}

/** The server's WAL position, bytes. */
async function walBytes(db: Database): Promise<number> {
  const { rows } = await db.query<{ at: string }>(
    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS at",
  );
  return Number(rows[0]!.at);
}

/**
 * FD-24's durable per-follower timeline table: the celebrity's post fanned out again through
 * the same Fanout, into PostgreSQL rows instead of Redis lists — its write rate, the bytes each
 * item holds (table + index) and the WAL it writes, beside the lists' figures of the same run.
 */
async function durableTimelineRows(o: {
  db: Database;
  graph: GraphStore;
  posts: PostStore;
  celebrity: TimedPost;
  listBytesPerItem: number;
}): Promise<BenchResult[]> {
  const durable = new DurableTimelines(o.db);
  const walBefore = await walBytes(o.db);
  const run = await timedPost({
    graph: o.graph,
    timelines: durable,
    posts: o.posts,
    thresholds: PUSH_ALL,
    authorId: 1n,
  });
  const walPerItem = ((await walBytes(o.db)) - walBefore) / run.written;
  const { bytes, rows } = await durable.footprint();
  const scenario = `FD-24 durable per-follower timeline table (PostgreSQL, (follower, post) primary key): the same post to ${run.followers} followers through the same fan-out`;
  const lists = "Redis lists (timeline-add-many)";
  return [
    benchRow({
      system: SYSTEM,
      scenario,
      metric: "fan-out item writes",
      unit: "writes/s",
      value: run.written / (run.totalMs / 1000),
      peer: { name: lists, value: o.celebrity.written / (o.celebrity.totalMs / 1000) },
    }),
    benchRow({
      system: SYSTEM,
      scenario,
      metric: "time until in every follower's timeline",
      unit: "ms",
      value: run.totalMs,
      peer: { name: lists, value: o.celebrity.totalMs },
    }),
    benchRow({
      system: SYSTEM,
      scenario,
      metric: "bytes per item held (table + index; lists: Redis used_memory growth)",
      unit: "B",
      value: bytes / rows,
      peer: { name: lists, value: o.listBytesPerItem },
      direction: "lower-is-better",
    }),
    benchRow({
      system: SYSTEM,
      scenario,
      metric: "WAL written per item (the server's, over the fan-out)",
      unit: "B",
      value: walPerItem,
      direction: "lower-is-better",
    }),
  ];
}

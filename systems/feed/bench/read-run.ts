/**
 * The read scenarios of `casebook bench feed` (issue 20): the home feed of sampled readers on
 * one seeded graph (bench/read-seed.ts), served five ways on the same PostgreSQL and Redis, in
 * the same run, each as its own process through its real entry point:
 *
 * - **hybrid** — ours as configured: authors above the celebrity line are pulled at read time
 *   (through their cached ids, written through by each post), everyone else is in the reader's
 *   list; a warm read is one Redis round trip (the home-read script) and no database one;
 * - **pure push** — the line at infinity: every post in every list (FD-24 "push for everyone");
 * - **pure pull** — the line at 0 and no celebrity cache: every followee queried at read time
 *   (FD-04; the reader's list still exists — a rebuild fills it — and is read in parallel);
 * - **SQL join** — bench/join-feed-server.ts: one join of follows and posts (FD-24's first);
 * - **whole-feed cache (1 h TTL)** — bench/whole-feed-cache-server.ts: the join's page cached in
 *   Redis for an hour (FD-24's fourth); after its run a followee of 100 readers posts and their
 *   next reads are checked for it (the staleness the text rejects it for).
 *
 * Lists are built the way a returning user's are (FD-20): each reader's first read rebuilds it
 * by pull; a warm-up pass reads every reader until no answer is partial. Then Debian's `wrk`
 * (its own process) finds each one's closed-loop maximum over the readers in turn, and lab's
 * open-loop generator measures p99 at 70% of it from LOAD_PROCESSES processes of its own
 * (bench/read-load-child.ts, each half the rate; never this process, whose event loop a
 * generator would share), reporting the rate asked and sent and the late and dropped sends.
 *
 * @example
 * const rows = await runReadBench({ users: 20_000, readers: 2_000, durationS: 5, redisUrl, databaseUrl });
 */
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, get } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { Histogram } from "@casebook/kit/histogram";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { benchLog } from "@casebook/lab/bench-main";
import type { BenchResult } from "@casebook/lab/bench-report";
import { goalLine, scenarioRows } from "@casebook/lab/bench-rows";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { uniqueName } from "@casebook/lab/test-engines";
import { runWrk, writeCyclingScript } from "@casebook/lab/wrk-run";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostStore } from "../src/store/post-store.ts";
import type { ReadLoadCommand, ReadLoadRequest, ReadLoadResult } from "./read-load-child.ts";
import { type Reader, seedReadBench } from "./read-seed.ts";

const SYSTEM = "feed";
const serviceEntry = new URL("../src/main.ts", import.meta.url);
const joinEntry = new URL("./join-feed-server.ts", import.meta.url);
const wholeCacheEntry = new URL("./whole-feed-cache-server.ts", import.meta.url);
const loadChildEntry = new URL("./read-load-child.ts", import.meta.url);
const WHOLE_CACHE = "whole-feed cache (1 h TTL)";
/** Readers checked for FD-24's staleness: a post made after their page was cached. */
const STALENESS_READERS = 100;
/** wrk's connections: enough to fill two cores without queueing most of the run in sockets. */
const CONNECTIONS = 32;
const PAGE = 20;
/** The goal of issue 20. */
const P99_GOAL_MS = 20;
/** Warm-up passes over the readers before a design is measured (each rebuilds what the last could not). */
const WARM_PASSES = 4;
const WARM_CONCURRENCY = 8;

export interface ReadBenchOptions {
  readonly users: number;
  readonly alpha: number;
  readonly postsPerAuthor: number;
  readonly readers: number;
  /** Followers above which an author is pulled in the hybrid design. */
  readonly celebrityFollowers: number;
  readonly durationS: number;
  readonly redisUrl: string;
  readonly databaseUrl: string;
}

export interface ReadBenchResult {
  readonly rows: BenchResult[];
  readonly goals: string[];
}

type Design = "hybrid" | "pure push" | "pure pull" | "SQL join" | typeof WHOLE_CACHE;

interface Measured {
  readonly wrkPerS: number;
  readonly wrkP99Ms: number;
  readonly loopP99Ms: number;
  readonly loopRatePerS: number;
  readonly loopAskedPerS: number;
  readonly loopSentPerS: number;
  readonly loopLate: number;
  readonly loopDropped: number;
  readonly errors: number;
}

/** FEED_* settings that put the celebrity line where each design wants it. */
function designEnv(
  design: "hybrid" | "pure push" | "pure pull",
  celebrityFollowers: number,
): NodeJS.ProcessEnv {
  // fullPushMax = writes/s × delay / 1000; with everyone active (the seed), no middle tier.
  if (design === "hybrid")
    return { FEED_FANOUT_WRITES_PER_S: String(celebrityFollowers), FEED_DELAY_TARGET_MS: "1000" };
  if (design === "pure push")
    return { FEED_FANOUT_WRITES_PER_S: "100000000", FEED_DELAY_TARGET_MS: "3600000" };
  return { FEED_FANOUT_WRITES_PER_S: "1", FEED_DELAY_TARGET_MS: "10", FEED_CELEBRITY_CACHE_TTL_MS: "0" };
}

function feedPath(reader: Reader): string {
  return `/v1/users/${reader.userId}/feed?limit=${PAGE}`;
}

/** GET one reader's feed on a keep-alive agent: resolves the status; `signal` abandons it (a timeout). */
function readFeed(agent: Agent, url: URL, reader: Reader, signal?: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = get(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: feedPath(reader),
        headers: { authorization: `Bearer ${reader.key}` },
        signal,
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.once("error", reject);
  });
}

/** Reads every reader until none is partial (206: its list was being rebuilt), within WARM_PASSES. */
async function warm(server: ServerProcess, readers: readonly Reader[]): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: WARM_CONCURRENCY });
  const url = new URL(server.url);
  let pending = [...readers];
  try {
    for (let pass = 0; pass < WARM_PASSES && pending.length > 0; pass++) {
      const partial: Reader[] = [];
      for (let i = 0; i < pending.length; i += WARM_CONCURRENCY) {
        const batch = pending.slice(i, i + WARM_CONCURRENCY);
        const statuses = await Promise.all(batch.map((r) => readFeed(agent, url, r)));
        statuses.forEach((status, j) => {
          if (status === 206) partial.push(batch[j]!);
          else if (status !== 200) throw new Error(`${server.name}: a warm-up read answered ${status}`);
        });
      }
      pending = partial;
    }
    return pending.length;
  } finally {
    agent.destroy();
  }
}

/** Open-loop generators, each its own process (bench/read-load-child.ts), sharing the rate. */
const LOAD_PROCESSES = 2;
const WARMUP_MS = 1_000;

/** The open-loop generators of one run: started once, used for every design, closed at the end. */
interface LoadGenerators {
  run(url: string, ratePerS: number, durationMs: number): Promise<OpenLoopRun>;
  close(): Promise<void>;
}

interface OpenLoopRun {
  readonly askedPerS: number;
  readonly sentPerS: number;
  readonly achievedRatePerS: number;
  readonly p99Ms: number;
  readonly errors: number;
  readonly dropped: number;
  readonly late: number;
}

async function startLoadGenerators(readers: readonly Reader[]): Promise<LoadGenerators> {
  const children: SpawnedChild[] = [];
  try {
    for (let i = 0; i < LOAD_PROCESSES; i++)
      children.push(await spawnChild(loadChildEntry, { ready: /"ready"/, lineTimeoutMs: 120_000 }));
  } catch (error) {
    await Promise.allSettled(children.map((c) => c.stop()));
    throw error;
  }
  const requests: ReadLoadRequest[] = readers.map((r) => ({
    path: feedPath(r),
    authorization: `Bearer ${r.key}`,
  }));
  return {
    async run(url, ratePerS, durationMs) {
      const results = await Promise.all(
        children.map(async (child, first) => {
          const command: ReadLoadCommand = {
            cmd: "run",
            url,
            requests,
            first,
            stride: LOAD_PROCESSES,
            ratePerS: ratePerS / LOAD_PROCESSES,
            durationMs,
            warmupMs: WARMUP_MS,
          };
          child.send(JSON.stringify(command));
          return JSON.parse(await child.nextLine()) as ReadLoadResult;
        }),
      );
      const latencyUs = new Histogram({
        lowestDiscernibleValue: 1,
        highestTrackableValue: 3_600_000_000,
        significantDigits: 3,
      });
      for (const r of results) for (const [low, count] of r.buckets) latencyUs.record(low, count);
      const sum = (pick: (r: ReadLoadResult) => number) => results.reduce((s, r) => s + pick(r), 0);
      return {
        askedPerS: sum((r) => r.asked),
        sentPerS: sum((r) => r.sentPerS),
        achievedRatePerS: sum((r) => r.achievedRatePerS),
        p99Ms: latencyUs.summary().p99 / 1_000,
        errors: sum((r) => r.errors),
        dropped: sum((r) => r.dropped),
        late: sum((r) => r.late),
      };
    },
    async close() {
      await Promise.allSettled(children.map((c) => c.stop({ line: JSON.stringify({ cmd: "close" }) })));
    },
  };
}

async function measure(
  server: ServerProcess,
  load: LoadGenerators,
  script: string,
  durationS: number,
): Promise<Measured> {
  const wrk = await runWrk({ url: server.url, durationS, connections: CONNECTIONS, script });
  // A maximum made of error answers measures nothing: past 1% the run stops, named.
  if (wrk.errors > 0.01 * wrk.requestsPerS * durationS)
    throw new Error(
      `${server.name}: ${wrk.errors} of ~${Math.round(wrk.requestsPerS * durationS)} wrk answers were errors`,
    );
  const rate = Math.max(LOAD_PROCESSES, Math.round(0.7 * wrk.requestsPerS));
  const loop = await load.run(server.url, rate, durationS * 1000);
  benchLog(
    `${server.name}: open loop asked ${loop.askedPerS}/s, sent ${Math.round(loop.sentPerS)}/s, ` +
      `${loop.late} late, ${loop.dropped} dropped, p99 ${loop.p99Ms.toFixed(1)} ms (load ${loadAverage()})`,
  );
  return {
    wrkPerS: wrk.requestsPerS,
    wrkP99Ms: wrk.p99Ms,
    loopP99Ms: loop.p99Ms,
    loopRatePerS: loop.achievedRatePerS,
    loopAskedPerS: loop.askedPerS,
    loopSentPerS: loop.sentPerS,
    loopLate: loop.late,
    loopDropped: loop.dropped,
    errors: wrk.errors + loop.errors + loop.dropped,
  };
}

/**
 * The generators alone: the same rate against nginx answering `return 200` (its own process, a
 * C server far faster than the feed), in the same run — the p99 and late sends the generators and
 * the machine add by themselves, the floor under the hybrid's figure.
 */
async function generatorFloor(
  load: LoadGenerators,
  ratePerS: number,
  durationS: number,
): Promise<OpenLoopRun> {
  const nginx = await spawnNginx({
    http: (port) => `server { listen 127.0.0.1:${port}; access_log off; location / { return 200 "{}"; } }`,
  });
  try {
    const run = await load.run(nginx.url, ratePerS, durationS * 1000);
    benchLog(
      `generator floor (nginx return 200): asked ${run.askedPerS}/s, sent ${Math.round(run.sentPerS)}/s, ` +
        `${run.late} late, ${run.dropped} dropped, p99 ${run.p99Ms.toFixed(1)} ms (load ${loadAverage()})`,
    );
    return run;
  } finally {
    await nginx.stop();
  }
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
}

export async function runReadBench(o: ReadBenchOptions): Promise<ReadBenchResult> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-feed-read-"));
  const schema = await openPostgresTestSchema(o.databaseUrl, {
    system: SYSTEM,
    prefix: "feed_read_bench",
    prepare: migrateFeed,
    maxConnections: 4,
  });
  const prefix = `feed:${uniqueName("readbench")}:`;
  const results = new Map<Design, Measured>();
  let stale: Staleness | undefined;
  let load: LoadGenerators | undefined;
  let floor: OpenLoopRun | undefined;
  try {
    benchLog(`seeding ${o.users} users, ${o.postsPerAuthor} posts per author, ${o.readers} readers' keys`);
    const seed = await seedReadBench(schema.db, o);
    benchLog(`graph: ${seed.authors} authors, ${seed.edges} follows, ${seed.posts} posts`);
    const script = await writeCyclingScript(
      dir,
      seed.readers.map((r) => ({ path: feedPath(r), headers: { authorization: `Bearer ${r.key}` } })),
    );
    load = await startLoadGenerators(seed.readers);
    for (const design of ["hybrid", "pure push", "pure pull", "SQL join", WHOLE_CACHE] as const) {
      const env = {
        DATABASE_URL: o.databaseUrl,
        FEED_DB_SCHEMA: schema.schema,
        LOG_LEVEL: "warn",
      };
      const server =
        design === "SQL join"
          ? await startServerProcess({ name: "feed SQL join", entry: joinEntry, env })
          : design === WHOLE_CACHE
            ? await startServerProcess({
                name: "feed whole-feed cache",
                entry: wholeCacheEntry,
                env: { ...env, REDIS_URL: o.redisUrl, FEED_REDIS_PREFIX: `${prefix}whole-cache:` },
              })
            : await startServerProcess({
                name: `feed ${design}`,
                entry: serviceEntry,
                env: {
                  ...env,
                  REDIS_URL: o.redisUrl,
                  FEED_REDIS_PREFIX: `${prefix}${design.replace(" ", "-")}:`,
                  FEED_ROLE: "api",
                  FEED_MAX_REBUILDS: "16",
                  ...designEnv(design, o.celebrityFollowers),
                },
              });
      try {
        benchLog(`${design}: warm-up (lists rebuilt by pull on each reader's first read)`);
        const stillPartial = await warm(server, seed.readers);
        if (stillPartial > 0) benchLog(`${design}: ${stillPartial} readers still partial after warm-up`);
        benchLog(`${design}: wrk ${o.durationS} s, then the open loop at 70%`);
        const measured = await measure(server, load!, script, o.durationS);
        results.set(design, measured);
        if (design === "hybrid") floor = await generatorFloor(load!, measured.loopAskedPerS, o.durationS);
        if (design === WHOLE_CACHE) stale = await staleness(server, seed.readers, schema.db);
      } finally {
        await server.stop();
      }
    }
    return report(o, seed.authors, results, stale!, floor!);
  } finally {
    await load?.close();
    const redis = await connectRedis({ url: o.redisUrl, commandTimeoutMs: 30_000 });
    try {
      await deletePrefixed(redis, prefix);
    } finally {
      await Promise.allSettled([closeRedis(redis), schema.drop(), rm(dir, { recursive: true, force: true })]);
    }
  }
}

/** Every key under `prefix` (the bench's own), deleted in SCAN batches. */
export async function deletePrefixed(
  redis: Awaited<ReturnType<typeof connectRedis>>,
  prefix: string,
): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1_000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== "0");
}

interface Staleness {
  readonly readers: number;
  /** Readers whose feed showed the post made after their page was cached. */
  readonly seeing: number;
  /** The oldest page served at the check, in seconds (the design's bound: the TTL). */
  readonly maxAgeS: number;
}

/**
 * FD-24's price of the whole-feed cache: after the run (every sampled reader's page cached), a
 * followee of each of STALENESS_READERS readers posts; their next read through the cache is
 * checked for it, and the served pages' `age` recorded.
 */
async function staleness(
  server: ServerProcess,
  readers: readonly Reader[],
  db: Database,
): Promise<Staleness> {
  const sample = readers.slice(0, STALENESS_READERS);
  const { rows } = await db.query<{ follower_id: bigint; followee_id: bigint }>(
    `SELECT DISTINCT ON (follower_id) follower_id, followee_id FROM follows
      WHERE follower_id = ANY($1::int8[]) ORDER BY follower_id, followee_id`,
    [sample.map((r) => String(r.userId))],
  );
  const followee = new Map(rows.map((r) => [BigInt(r.follower_id), BigInt(r.followee_id)]));
  const posts = new PostStore(db);
  const ids = new SnowflakeGenerator({ clock: systemClock, workerId: 1_023 });
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  const url = new URL(server.url);
  let seeing = 0;
  let maxAgeS = 0;
  try {
    for (const reader of sample) {
      const author = followee.get(reader.userId);
      if (author === undefined) continue;
      const made = await posts.create({ id: ids.next(), authorId: author, text: "after", nowMs: Date.now() });
      const { body, age } = await getJson(agent, url, feedPath(reader));
      if (body.includes(`"${made.id}"`)) seeing++;
      maxAgeS = Math.max(maxAgeS, age);
    }
  } finally {
    agent.destroy();
  }
  return { readers: sample.length, seeing, maxAgeS };
}

function getJson(agent: Agent, url: URL, path: string): Promise<{ body: string; age: number }> {
  return new Promise((resolve, reject) => {
    const req = get({ agent, host: url.hostname, port: url.port, path }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.once("end", () => resolve({ body, age: Number(res.headers.age ?? 0) }));
    });
    req.once("error", reject);
  });
}

function report(
  o: ReadBenchOptions,
  authors: number,
  results: Map<Design, Measured>,
  stale: Staleness,
  floor: OpenLoopRun,
): ReadBenchResult {
  const hybrid = results.get("hybrid")!;
  const shape = `${o.users} users (${authors} authors, power law α=${o.alpha}), ${o.readers} readers, pages of ${PAGE}`;
  const rows: BenchResult[] = [];
  const own = scenarioRows({
    system: SYSTEM,
    scenario: `home feed, hybrid (celebrity > ${o.celebrityFollowers} followers): ${shape}`,
    tidy: true,
  });
  rows.push(
    own.value("reads (wrk max, c=32)", "reads/s", hybrid.wrkPerS),
    own.value("latency p99 at 70% of max (open loop)", "ms", hybrid.loopP99Ms),
    own.value("achieved rate at 70%", "reads/s", hybrid.loopRatePerS),
    own.value(
      `open loop: rate asked (${LOAD_PROCESSES} generator processes)`,
      "reads/s",
      hybrid.loopAskedPerS,
    ),
    own.value("open loop: rate sent", "reads/s", hybrid.loopSentPerS),
    own.count("open loop: sends late (> 10 ms behind schedule)", hybrid.loopLate),
    own.count("open loop: sends dropped (2 000 in flight per generator)", hybrid.loopDropped),
    own.count("errors (non-2xx, socket, dropped)", hybrid.errors),
  );
  const generators = scenarioRows({
    system: SYSTEM,
    scenario: "the open-loop generators alone: the hybrid's 70% rate against nginx `return 200`",
    tidy: true,
  });
  rows.push(
    generators.value("latency p99", "ms", floor.p99Ms),
    generators.value("rate sent", "reads/s", floor.sentPerS),
    generators.count("sends late (> 10 ms behind schedule)", floor.late),
    generators.count("sends dropped", floor.dropped),
  );
  for (const design of ["pure push", "pure pull", "SQL join", WHOLE_CACHE] as const) {
    const other = results.get(design)!;
    const vs = scenarioRows({
      system: SYSTEM,
      scenario: `home feed: hybrid vs ${design}`,
      peer: design,
      tidy: true,
    });
    rows.push(
      vs.value("reads (wrk max, c=32)", "reads/s", hybrid.wrkPerS, { peer: other.wrkPerS }),
      vs.value("latency p99 at 70% of each max", "ms", hybrid.loopP99Ms, { peer: other.loopP99Ms }),
      vs.count(`errors, ${design}`, other.errors),
    );
  }
  const cache = scenarioRows({
    system: SYSTEM,
    scenario: `${WHOLE_CACHE}: a followee posts after the reader's page was cached (${stale.readers} readers)`,
    tidy: true,
  });
  rows.push(
    cache.count("readers whose next read shows the new post", stale.seeing),
    cache.value("age of the oldest page served then (bound: the TTL, 3600 s)", "s", stale.maxAgeS),
  );
  const goals = [
    goalLine(
      `read p99 < ${P99_GOAL_MS} ms at 70% of the maximum (hybrid)`,
      `${hybrid.loopP99Ms.toFixed(1)} ms`,
      hybrid.loopP99Ms < P99_GOAL_MS,
    ),
  ];
  return { rows, goals };
}

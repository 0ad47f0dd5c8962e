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
 * by pull; a warm-up pass reads every reader until no answer is partial. All five stay up; then
 * Debian's `wrk` (its own process) finds each one's closed-loop maximum over the readers in turn,
 * `repeats` times with the designs interleaved, and lab's open-loop generator measures p50 and
 * p99 at 70% of the median maximum, `repeats` times again, from LOAD_PROCESSES processes of its
 * own (lab's http-open-loop-processes.ts, each half the rate and half of wrk's connections as a
 * fixed pool opened before its first send; never this process, whose event loop a generator
 * would share), reporting the rate asked and sent and the late and dropped sends. The pool puts
 * on the server the concurrency its maximum was measured at; opened on demand, a run began with
 * ~500 connects in its first 0.5 s (issue 20, 2026-12-07: the goal's figure did not move with
 * the pool). The rows give every run and the medians (bench/read-report.ts); the goal is judged on
 * the median.
 *
 * @example
 * const { rows, goals } = await runReadBench({ users: 20_000, readers: 2_000, durationS: 5, repeats: 3, redisUrl, databaseUrl });
 */
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, get } from "node:http";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { benchLog } from "@casebook/lab/bench-main";
import { type HttpOpenLoopRun, startHttpOpenLoop } from "@casebook/lab/http-open-loop-processes";
import { machineBusyShare, machineTicks, treeCpuSeconds } from "@casebook/lab/process-cpu";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { uniqueName } from "@casebook/lab/test-engines";
import { runWrk, writeCyclingScript } from "@casebook/lab/wrk-run";
import { migrateFeed } from "../src/store/migrate.ts";
import { PostStore } from "../src/store/post-store.ts";
import {
  DESIGNS,
  type Design,
  type DesignRuns,
  type LoopRun,
  loopRate,
  type MaxRun,
  type ReadBenchResult,
  readReport,
  type Staleness,
  WHOLE_CACHE,
} from "./read-report.ts";
import { type Reader, seedReadBench } from "./read-seed.ts";

const SYSTEM = "feed";
const serviceEntry = new URL("../src/main.ts", import.meta.url);
const joinEntry = new URL("./join-feed-server.ts", import.meta.url);
const wholeCacheEntry = new URL("./whole-feed-cache-server.ts", import.meta.url);
/** Readers checked for FD-24's staleness: a post made after their page was cached. */
const STALENESS_READERS = 100;
/** wrk's connections (enough to fill two cores without queueing most of the run in sockets), and the open loop's pool. */
const CONNECTIONS = 32;
const PAGE = 20;
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
  /** Runs of each design's wrk maximum and of its open loop; rows give each and their median. */
  readonly repeats: number;
  readonly redisUrl: string;
  readonly databaseUrl: string;
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

/** Open-loop generators, each its own process (lab's http-open-loop-child.ts), sharing the rate. */
const LOAD_PROCESSES = 2;
const WARMUP_MS = 1_000;

/** The open-loop generators of one run: started once, used for every design, closed at the end. */
interface LoadGenerators {
  run(url: string, ratePerS: number, durationMs: number): Promise<OpenLoopRun>;
  close(): Promise<void>;
}

type OpenLoopRun = HttpOpenLoopRun;

async function startLoadGenerators(readers: readonly Reader[]): Promise<LoadGenerators> {
  const load = await startHttpOpenLoop({ processes: LOAD_PROCESSES });
  const requests = readers.map((r) => ({
    path: feedPath(r),
    headers: { authorization: `Bearer ${r.key}` },
  }));
  return {
    run: (url, ratePerS, durationMs) =>
      load.run({
        url,
        requests,
        okStatuses: [200, 206],
        ratePerS,
        durationMs,
        warmupMs: WARMUP_MS,
        connections: CONNECTIONS,
      }),
    close: () => load.close(),
  };
}

/** One wrk run: the design's closed-loop maximum over the readers in turn. */
async function maximum(server: ServerProcess, script: string, durationS: number): Promise<MaxRun> {
  const wrk = await runWrk({ url: server.url, durationS, connections: CONNECTIONS, script });
  // A maximum made of error answers measures nothing: past 1% the run stops, named.
  if (wrk.errors > 0.01 * wrk.requestsPerS * durationS)
    throw new Error(
      `${server.name}: ${wrk.errors} of ~${Math.round(wrk.requestsPerS * durationS)} wrk answers were errors`,
    );
  benchLog(`${server.name}: wrk max ${Math.round(wrk.requestsPerS)}/s (load ${loadAverage()})`);
  return { perS: wrk.requestsPerS, errors: wrk.errors };
}

/**
 * One open-loop run at `ratePerS`: its figures, the load average when it ended, how busy the
 * machine was through it (every process: the server, Redis, PostgreSQL, the generators) and, given
 * the server's pid, that process's share of a core — the headroom its latencies were measured with.
 */
async function openLoop(
  name: string,
  load: LoadGenerators,
  url: string,
  ratePerS: number,
  durationS: number,
  serverPid?: number,
): Promise<LoopRun> {
  const ticks = machineTicks();
  const serverCpuS = serverPid === undefined ? undefined : treeCpuSeconds([serverPid]);
  const startedMs = performance.now();
  const run = await load.run(url, ratePerS, durationS * 1000);
  const machineBusy = machineBusyShare(ticks, machineTicks());
  const serverCpuAfterS = serverPid === undefined ? undefined : treeCpuSeconds([serverPid]);
  const serverCores =
    serverCpuS === undefined || serverCpuAfterS === undefined
      ? undefined
      : (serverCpuAfterS - serverCpuS) / ((performance.now() - startedMs) / 1000);
  const busy = machineBusy === undefined ? "" : `, machine ${Math.round(machineBusy * 100)}% busy`;
  const own = serverCores === undefined ? "" : `, the server ${Math.round(serverCores * 100)}% of a core`;
  benchLog(
    `${name}: open loop asked ${run.askedPerS}/s, sent ${Math.round(run.sentPerS)}/s, ` +
      `${run.late} late, ${run.dropped} dropped, ${run.connectionsOpened} connections, p50 ${run.p50Ms.toFixed(1)} ms, ` +
      `p99 ${run.p99Ms.toFixed(1)} ms${busy}${own} (load ${loadAverage()})`,
  );
  return {
    p50Ms: run.p50Ms,
    p99Ms: run.p99Ms,
    achievedRatePerS: run.achievedRatePerS,
    askedPerS: run.askedPerS,
    sentPerS: run.sentPerS,
    late: run.late,
    dropped: run.dropped,
    errors: run.errors,
    load1: loadavg()[0]!,
    ...(machineBusy === undefined ? {} : { machineBusy }),
    ...(serverCores === undefined ? {} : { serverCores }),
  };
}

/**
 * The generators alone: nginx answering `return 200` (its own process, a C server far faster than
 * the feed), sent the hybrid's rate right after each of its runs — the p99 and late sends the
 * generators and the machine add by themselves, the floor under the hybrid's figure.
 */
function spawnFloorServer() {
  return spawnNginx({
    http: (port) => `server { listen 127.0.0.1:${port}; access_log off; location / { return 200 "{}"; } }`,
  });
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
}

/** Starts one design's server on the seeded schema (each its own process through its real entry). */
function startDesign(
  design: Design,
  o: ReadBenchOptions,
  schema: string,
  prefix: string,
): Promise<ServerProcess> {
  const env = { DATABASE_URL: o.databaseUrl, FEED_DB_SCHEMA: schema, LOG_LEVEL: "warn" };
  if (design === "SQL join") return startServerProcess({ name: "feed SQL join", entry: joinEntry, env });
  if (design === WHOLE_CACHE)
    return startServerProcess({
      name: "feed whole-feed cache",
      entry: wholeCacheEntry,
      env: { ...env, REDIS_URL: o.redisUrl, FEED_REDIS_PREFIX: `${prefix}whole-cache:` },
    });
  return startServerProcess({
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
}

/**
 * Every design is started and warmed first and stays up; then `repeats` rounds of wrk maxima,
 * the designs interleaved within each round (a load that drifts reaches all of them alike), then
 * `repeats` rounds of open loops, each design at 70% of the median of its maxima (one lucky 5 s
 * maximum no longer sets the rate), the generators' floor after the hybrid's in each round.
 * Default (3 repeats, 5 s): 15 wrk runs of 5 s and 18 open loops of 6 s — ~3 min of measuring,
 * plus the seed and the five warm-ups.
 */
export async function runReadBench(o: ReadBenchOptions): Promise<ReadBenchResult> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-feed-read-"));
  const schema = await openPostgresTestSchema(o.databaseUrl, {
    system: SYSTEM,
    prefix: "feed_read_bench",
    prepare: migrateFeed,
    maxConnections: 4,
  });
  const prefix = `feed:${uniqueName("readbench")}:`;
  const servers = new Map<Design, ServerProcess>();
  let load: LoadGenerators | undefined;
  let nginx: Awaited<ReturnType<typeof spawnFloorServer>> | undefined;
  try {
    benchLog(`seeding ${o.users} users, ${o.postsPerAuthor} posts per author, ${o.readers} readers' keys`);
    const seed = await seedReadBench(schema.db, o);
    benchLog(`graph: ${seed.authors} authors, ${seed.edges} follows, ${seed.posts} posts`);
    const script = await writeCyclingScript(
      dir,
      seed.readers.map((r) => ({ path: feedPath(r), headers: { authorization: `Bearer ${r.key}` } })),
    );
    load = await startLoadGenerators(seed.readers);
    for (const design of DESIGNS) {
      const server = await startDesign(design, o, schema.schema, prefix);
      servers.set(design, server);
      benchLog(`${design}: warm-up (lists rebuilt by pull on each reader's first read)`);
      const stillPartial = await warm(server, seed.readers);
      if (stillPartial > 0) benchLog(`${design}: ${stillPartial} readers still partial after warm-up`);
    }
    const maxima = new Map<Design, MaxRun[]>(DESIGNS.map((d) => [d, []]));
    for (let run = 1; run <= o.repeats; run++) {
      benchLog(`wrk maxima, run ${run} of ${o.repeats} (${o.durationS} s each)`);
      for (const design of DESIGNS)
        maxima.get(design)!.push(await maximum(servers.get(design)!, script, o.durationS));
    }
    nginx = await spawnFloorServer();
    const loops = new Map<Design, LoopRun[]>(DESIGNS.map((d) => [d, []]));
    const floors: LoopRun[] = [];
    for (let run = 1; run <= o.repeats; run++) {
      benchLog(`open loops at 70% of each median maximum, run ${run} of ${o.repeats}`);
      for (const design of DESIGNS) {
        const rate = loopRate(maxima.get(design)!, LOAD_PROCESSES);
        const server = servers.get(design)!;
        loops.get(design)!.push(await openLoop(server.name, load, server.url, rate, o.durationS, server.pid));
        if (design === "hybrid")
          floors.push(
            await openLoop("generator floor (nginx return 200)", load, nginx.url, rate, o.durationS),
          );
      }
    }
    const stale = await staleness(servers.get(WHOLE_CACHE)!, seed.readers, schema.db);
    const results = new Map<Design, DesignRuns>(
      DESIGNS.map((d) => [d, { maxima: maxima.get(d)!, loops: loops.get(d)! }]),
    );
    const shape = {
      users: o.users,
      authors: seed.authors,
      alpha: o.alpha,
      readers: o.readers,
      page: PAGE,
      connections: CONNECTIONS,
      celebrityFollowers: o.celebrityFollowers,
      generatorProcesses: LOAD_PROCESSES,
    };
    return readReport(shape, results, floors, stale);
  } finally {
    await Promise.allSettled([...servers.values()].map((s) => s.stop()));
    await nginx?.stop();
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

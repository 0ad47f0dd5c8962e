/**
 * `casebook bench feed`, two scenarios in one run:
 *
 * - **reads** (bench/read-run.ts): the home feed of sampled readers on one seeded graph, served
 *   hybrid, pure push, pure pull, as one SQL join and through a whole-feed cache with a 1 h TTL
 *   (FD-04, FD-24): wrk's maximum and p99 at 70% of it, each design its own process on the same
 *   engines, every figure from --repeats runs (each run and the median; the goal on the median),
 *   and the cache's staleness;
 * - **fan-out** (bench/fanout-run.ts): one post by a seed-graph author pushed into every
 *   follower's list through the real path (PostgreSQL follower pages, pipelined
 *   `timeline-add` scripts on Redis) beside the floor of `redis-benchmark ZADD -P 16`, then the
 *   same post into FD-24's durable per-follower timeline table (bench/durable-timelines.ts).
 *
 * Markdown table on stdout, JSON lines with --json, progress on stderr. Engines: REDIS_URL and
 * DATABASE_URL, else the project's loopback ones.
 *
 * @example
 * // node systems/feed/bench/main.ts --followers 50000 --json
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, renderBench } from "@casebook/lab/bench-report";
import { testDatabaseUrl, testRedisUrl } from "@casebook/lab/test-engines";
import { errors } from "../src/errors.ts";
import { runFanoutBench } from "./fanout-run.ts";
import { runReadBench } from "./read-run.ts";

const SYSTEM = "feed";

interface Engines {
  readonly redisUrl: string;
  readonly databaseUrl: string;
  close(): Promise<void>;
}

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly followers: number;
  readonly scenarios: readonly ("reads" | "fanout")[];
  readonly users: number;
  readonly readers: number;
  readonly postsPerAuthor: number;
  readonly celebrityFollowers: number;
  readonly durationS: number;
  readonly repeats: number;
}

/** The read graph's power law exponent: below 1, followings spread over more authors. */
const READ_ALPHA = 0.7;

/** Each flag with its bounds, default and help line: a typo is refused, not run for a day. */
const cli = defineBenchArgs({
  flags: {
    followers: flag.integer({
      min: 1_000,
      max: 2_000_000,
      default: 50_000,
      help: "fan-out: followers of the posting author",
    }),
    scenarios: flag.choiceList(["reads", "fanout"], {
      help: "which scenarios to run, comma-separated (default all)",
    }),
    users: flag.integer({ min: 1_000, max: 1_000_000, default: 20_000, help: "reads: users in the graph" }),
    readers: flag.integer({
      min: 10,
      max: 100_000,
      default: 2_000,
      help: "reads: readers sampled (one key each)",
    }),
    postsPerAuthor: flag.integer({ min: 1, max: 100, default: 3, help: "reads: posts by every author" }),
    celebrityFollowers: flag.integer({
      min: 1,
      max: 10_000_000,
      default: 1_000,
      help: "reads: followers above which the hybrid design pulls an author",
    }),
    durationS: flag.integer({
      min: 1,
      max: 600,
      default: 5,
      help: "reads: seconds of each wrk run and of each open loop",
    }),
    repeats: flag.integer({
      min: 1,
      max: 20,
      default: 3,
      help: "reads: runs of each design's wrk maximum and of its open loop (the goal is judged on the median)",
    }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `feed bench — home-feed reads (hybrid, pure push, pure pull, SQL join, 1 h whole-feed cache) and fan-out vs ZADD

Usage
  npx casebook bench feed [options]
  npx casebook bench feed --scenarios reads --users 20000 --duration-s 5

reads    seeds a power-law graph, posts and one key per sampled reader in a fresh PostgreSQL
         schema; serves the home feed five ways, each its own process (lists rebuilt on each
         reader's first read, keys under feed:readbench_…, deleted after); wrk finds each
         maximum, then an open loop (two generator processes of its own) measures p50 and p99 at
         70% of it; the hybrid's rate is also sent to nginx \`return 200\` (the generators' own
         floor). Each measurement is repeated (--repeats, default 3, the designs interleaved;
         the open loops at 70% of the median maximum): rows give every run and the median, and
         the goal is judged on the median. Default run: ~3 min of measuring plus the seed and
         the warm-ups.
         Needs wrk (installed when missing) and nginx.
fanout   gives every follower a list, fans one post out through the real path and times it,
         then runs redis-benchmark ZADD -P 16 into many keys on the same Redis; then the
         same post through the same path into FD-24's durable per-follower timeline table
         (PostgreSQL): writes/s, bytes per item and WAL per item beside the lists'.

Needs both engines (REDIS_URL, DATABASE_URL, or the loopback defaults).

Options
${cli.flagHelp()}
`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

async function openEngines(): Promise<Engines> {
  return {
    redisUrl: process.env.REDIS_URL || testRedisUrl,
    databaseUrl: process.env.DATABASE_URL || testDatabaseUrl,
    close: async () => {},
  };
}

async function run(engines: Engines, args: BenchArgs, json: boolean): Promise<void> {
  const rows: BenchResult[] = [];
  const goals: string[] = [];
  if (args.scenarios.includes("reads")) {
    benchLog(`${SYSTEM} bench: home-feed reads, hybrid vs pure push vs pure pull vs one SQL join`);
    const reads = await runReadBench({ ...args, alpha: READ_ALPHA, ...engines });
    rows.push(...reads.rows);
    goals.push(...reads.goals);
  }
  if (args.scenarios.includes("fanout")) {
    benchLog(`${SYSTEM} bench: one post to ${args.followers} followers, then the ZADD floor`);
    rows.push(...(await runFanoutBench({ followers: args.followers, ...engines })));
  }
  process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
  if (!json && goals.length > 0) process.stdout.write(`\n${goals.join("\n")}\n`);
}

export const benchProgram: BenchProgram<BenchArgs, Engines> = {
  name: SYSTEM,
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: openEngines,
  run,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);

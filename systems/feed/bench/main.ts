/**
 * `casebook bench feed`: the fan-out scenario (bench/fanout-run.ts) — one post by a seed-graph
 * author pushed into every follower's list through the real path (PostgreSQL follower pages,
 * pipelined `timeline-add` scripts on Redis) beside the floor of `redis-benchmark ZADD -P 16`
 * on the same Redis, in the same run. The read scenarios (hybrid vs pull vs push, FD-24's
 * rejected designs) are not built yet. Markdown table on stdout, JSON lines with --json,
 * progress on stderr. Engines: REDIS_URL and DATABASE_URL, else the project's loopback ones.
 *
 * @example
 * // node systems/feed/bench/main.ts --followers 50000 --json
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { renderBench } from "@casebook/lab/bench-report";
import { testDatabaseUrl, testRedisUrl } from "@casebook/lab/test-engines";
import { errors } from "../src/errors.ts";
import { runFanoutBench } from "./fanout-run.ts";

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
}

/** Each flag with its bounds, default and help line: a typo is refused, not run for a day. */
const cli = defineBenchArgs({
  flags: {
    followers: flag.integer({
      min: 1_000,
      max: 2_000_000,
      default: 50_000,
      help: "followers of the posting author",
    }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `feed bench — fan-out list writes/s vs redis-benchmark ZADD -P 16

Usage
  npx casebook bench feed [options]

Seeds a graph in a fresh PostgreSQL schema, gives every follower a list in Redis (keys
under feed:bench-…, deleted after), fans one post out through the real path and times it,
then runs redis-benchmark ZADD -P 16 into many keys on the same Redis. Needs both engines
(REDIS_URL, DATABASE_URL, or the loopback defaults) and redis-benchmark on PATH.

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
  benchLog(`${SYSTEM} bench: one post to ${args.followers} followers, then the ZADD floor`);
  const rows = await runFanoutBench({ followers: args.followers, ...engines });
  process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
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

/**
 * The bench's command line: flags, their bounds, and the --help text. Every number
 * has a named bound so a typo (`--duration-ms 50000000`) is refused instead of
 * running for a day.
 *
 * @example
 * const args = parseBenchArgs(["--json", "--duration-ms", "300"]);
 * args.durationMs; // 300
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { benchErrors } from "./bench-errors.ts";

export type ScenarioName = "closed" | "open" | "burst" | "memory";
export const scenarioNames: readonly ScenarioName[] = ["closed", "open", "burst", "memory"];

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  /** RL-07 mode: the algorithm comparison table and decisions/s per algorithm, instead of the scenarios. */
  readonly algorithms: boolean;
  /** Measured time of one run, warmup excluded. */
  readonly durationMs: number;
  /** Time each run spends before measuring (JIT, connections, keys created). */
  readonly warmupMs: number;
  /** Closed-loop callers, each with one decision in flight. */
  readonly concurrency: number;
  /** Distinct users (keys) the decisions spread over. */
  readonly users: number;
  /** Open-loop arrival rate, decisions per second. */
  readonly ratePerS: number;
  readonly only: readonly ScenarioName[];
}

const cli = defineBenchArgs({
  flags: {
    json: flag.json(),
    algorithms: flag.boolean({
      help: "RL-07 instead: the algorithm comparison table, and decisions/s of every\nalgorithm on the in-process store and on Redis (runs 1/5 as long)",
    }),
    only: flag.choiceList(scenarioNames, { help: `comma-separated subset of: ${scenarioNames.join(", ")}` }),
    durationMs: flag.integer({ min: 100, max: 600_000, default: 5_000, help: "measured time per run" }),
    warmupMs: flag.integer({ min: 0, max: 60_000, default: 1_000, help: "unmeasured lead-in per run" }),
    concurrency: flag.integer({ min: 1, max: 1_000, default: 50, help: "closed-loop callers" }),
    users: flag.integer({ min: 1, max: 1_000_000, default: 10_000, help: "distinct keys" }),
    ratePerS: flag.integer({
      name: "rate",
      min: 1,
      max: 200_000,
      default: 20_000,
      help: "open-loop decisions/s",
    }),
    help: flag.help(),
  },
  invalid: (detail, flag, cause) =>
    benchErrors.create("RATELIMIT_BENCH_ARGS_INVALID", { detail, fields: { flag }, cause }),
});

/** Each flag's bounds and default, for the help's prose. */
const argBounds = cli.flags;

export const benchHelp = `casebook bench rate-limiter — our limiter beside rate-limiter-flexible, on one Redis, in one run

Target: $REDIS_URL when set, else a throw-away redis-server spawned for the run (and stopped after).
Every key lives under a unique prefix and is deleted at the end.

Scenarios (default: all four):
  closed   ${argBounds.concurrency.default} concurrent callers as fast as they go, keys spread over ${argBounds.users.default} users.
           Equal work: ours = Limiter.check (the full decision path: policy, in-flight bound,
           breaker, store) on a fixed window of 10 per 2 s, peer = rate-limiter-flexible
           RateLimiterRedis.consume, the same fixed window (same limit, same admitted share;
           a refusal is a decision); the same on an all-admitted limit; our token bucket on
           its own; the bare store spend and the unbatched what-if; floor = the design text's
           script, one EVALSHA per decision, from Node (ioredis) and from redis-benchmark
           (-c ${argBounds.concurrency.default}, unpipelined). Also Node CPU and Redis CPU per decision.
  open     ${argBounds.ratePerS.default} decisions/s at a fixed arrival rate: ours (fixed window, as shipped
           and unbatched) vs the peer's fixed window, our token bucket on its own; latency from
           the intended send time (p50, p99, p99.9), so a stall is not hidden.
  burst    50 … 3 000 checks of ONE key at once at one limiter (fail-open, 100/h): allowed
           beside the bound (capacity + refill × elapsed), shed (503 RATELIMIT_OVERLOADED),
           decided by the fallback, p99 latency.
  memory   RL-18: bytes per key (MEMORY USAGE; on a private Redis also the used_memory growth
           per key) for ours and the peer, and the projection for 50 million keys.

Flags:
${cli.flagHelp()}

Output: a markdown table on stdout (progress on stderr); with --json, one JSON object per line.
`;

/**
 * Parses and validates the flags; throws RATELIMIT_BENCH_ARGS_INVALID naming the flag.
 *
 * @example
 * parseBenchArgs(["--only", "open", "--rate", "5000"]).only; // ["open"]
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

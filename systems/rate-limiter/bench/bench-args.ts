/**
 * The bench's command line: flags, their bounds, and the --help text. Every number
 * has a named bound so a typo (`--duration-ms 50000000`) is refused instead of
 * running for a day.
 *
 * @example
 * const args = parseBenchArgs(["--json", "--duration-ms", "300"]);
 * args.durationMs; // 300
 */
import { parseArgs } from "node:util";
import { benchErrors } from "./bench-errors.ts";

export type ScenarioName = "closed" | "open" | "memory";
export const scenarioNames: readonly ScenarioName[] = ["closed", "open", "memory"];

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

/** Bounds of each numeric flag, inclusive. */
export const argBounds = {
  durationMs: { min: 100, max: 600_000, default: 5_000 },
  warmupMs: { min: 0, max: 60_000, default: 1_000 },
  concurrency: { min: 1, max: 1_000, default: 50 },
  users: { min: 1, max: 1_000_000, default: 10_000 },
  ratePerS: { min: 1, max: 200_000, default: 20_000 },
} as const;

export const benchHelp = `casebook bench rate-limiter — our limiter beside rate-limiter-flexible, on one Redis, in one run

Target: $REDIS_URL when set, else a throw-away redis-server spawned for the run (and stopped after).
Every key lives under a unique prefix and is deleted at the end.

Scenarios (default: all three):
  closed   ${argBounds.concurrency.default} concurrent callers as fast as they go, keys spread over ${argBounds.users.default} users:
           ours = Limiter.check (the full decision path: policy, breaker, store) and the bare
           store spend, as shipped (script-level batching) and unbatched (one call per decision);
           peer = rate-limiter-flexible RateLimiterRedis.consume (a refusal is a decision);
           floor = the design text's script, one EVALSHA per decision, from Node (ioredis) and
           from redis-benchmark (-c ${argBounds.concurrency.default}, unpipelined). Also Node CPU and Redis CPU per decision.
  open     ${argBounds.ratePerS.default} decisions/s at a fixed arrival rate: ours (as shipped and
           unbatched) vs peer; latency from the intended send time (p50, p99, p99.9),
           so a stall is not hidden.
  memory   RL-18: bytes per key (MEMORY USAGE; on a private Redis also the used_memory growth
           per key) for ours and the peer, and the projection for 50 million keys.

Flags:
  --json              JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio})
  --algorithms        RL-07 instead: the algorithm comparison table, and decisions/s of every
                      algorithm on the in-process store and on Redis (runs 1/5 as long)
  --only LIST         comma-separated subset of: ${scenarioNames.join(", ")}
  --duration-ms N     measured time per run (default ${argBounds.durationMs.default}; ${argBounds.durationMs.min}..${argBounds.durationMs.max})
  --warmup-ms N       unmeasured lead-in per run (default ${argBounds.warmupMs.default}; ${argBounds.warmupMs.min}..${argBounds.warmupMs.max})
  --concurrency N     closed-loop callers (default ${argBounds.concurrency.default}; ${argBounds.concurrency.min}..${argBounds.concurrency.max})
  --users N           distinct keys (default ${argBounds.users.default}; ${argBounds.users.min}..${argBounds.users.max})
  --rate N            open-loop decisions/s (default ${argBounds.ratePerS.default}; ${argBounds.ratePerS.min}..${argBounds.ratePerS.max})
  -h, --help          this text

Output: a markdown table on stdout (progress on stderr); with --json, one JSON object per line.
`;

function invalid(detail: string, flag: string): Error {
  return benchErrors.create("RATELIMIT_BENCH_ARGS_INVALID", { detail, fields: { flag } });
}

function integer(
  raw: string | undefined,
  flag: string,
  bounds: { min: number; max: number; default: number },
) {
  if (raw === undefined) return bounds.default;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw invalid(`--${flag}: must be an integer in [${bounds.min}, ${bounds.max}], got ${raw}`, flag);
  }
  return value;
}

function scenarioList(raw: string | undefined): ScenarioName[] {
  if (raw === undefined) return [...scenarioNames];
  const names = raw.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !(scenarioNames as readonly string[]).includes(name));
  if (unknown.length > 0 || names.length === 0) {
    throw invalid(
      `--only: unknown scenario(s) ${unknown.join(", ")}; use ${scenarioNames.join(", ")}`,
      "only",
    );
  }
  return scenarioNames.filter((name) => names.includes(name));
}

/**
 * Parses and validates the flags; throws RATELIMIT_BENCH_ARGS_INVALID naming the flag.
 *
 * @example
 * parseBenchArgs(["--only", "open", "--rate", "5000"]).only; // ["open"]
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: "boolean", short: "h" },
        json: { type: "boolean" },
        algorithms: { type: "boolean" },
        only: { type: "string" },
        "duration-ms": { type: "string" },
        "warmup-ms": { type: "string" },
        concurrency: { type: "string" },
        users: { type: "string" },
        rate: { type: "string" },
      },
    }));
  } catch (cause) {
    throw benchErrors.create("RATELIMIT_BENCH_ARGS_INVALID", {
      detail: `${(cause as Error).message}; see --help`,
      cause,
    });
  }
  const text = (name: string) => values[name] as string | undefined;
  return {
    help: values.help === true,
    json: values.json === true,
    algorithms: values.algorithms === true,
    durationMs: integer(text("duration-ms"), "duration-ms", argBounds.durationMs),
    warmupMs: integer(text("warmup-ms"), "warmup-ms", argBounds.warmupMs),
    concurrency: integer(text("concurrency"), "concurrency", argBounds.concurrency),
    users: integer(text("users"), "users", argBounds.users),
    ratePerS: integer(text("rate"), "rate", argBounds.ratePerS),
    only: scenarioList(text("only")),
  };
}

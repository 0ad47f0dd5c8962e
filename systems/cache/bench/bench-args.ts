/**
 * Flags of `casebook bench cache`, validated with named bounds; a bad flag is a
 * CACHE_BENCH_ARGS_INVALID naming it (exit 2, see lab's bench-main).
 *
 * @example
 * parseBenchArgs(["--duration-ms", "500", "--rounds", "1", "--json"]);
 */
import { cacheErrors } from "../src/cache-errors.ts";

export interface BenchArgs {
  readonly help: boolean;
  /** Target length of one redis-benchmark test (SET or GET) in one round. */
  readonly durationMs: number;
  /** Rounds per scenario; medians are reported (the machine is shared and noisy). */
  readonly rounds: number;
  readonly clients: number;
  /** Requests per pipeline in the pipelined scenario (redis-benchmark -P). */
  readonly pipeline: number;
  /** Distinct keys (redis-benchmark -r). */
  readonly keyspace: number;
  /** Value size of SET (redis-benchmark -d). */
  readonly dataBytes: number;
  /** Key space of the hit-ratio study (bench/hit-ratio.ts). */
  readonly hitRatioKeys: number;
  /** Requests per trace of the hit-ratio study; 0 skips it. */
  readonly hitRatioRequests: number;
}

export const benchDefaults: BenchArgs = Object.freeze({
  help: false,
  durationMs: 2_000,
  rounds: 3,
  clients: 50,
  pipeline: 16,
  keyspace: 100_000,
  dataBytes: 100,
  hitRatioKeys: 100_000,
  hitRatioRequests: 1_000_000,
});

const BOUNDS: Readonly<Record<string, { key: keyof BenchArgs; min: number; max: number }>> = {
  "--duration-ms": { key: "durationMs", min: 100, max: 600_000 },
  "--rounds": { key: "rounds", min: 1, max: 21 },
  "--clients": { key: "clients", min: 1, max: 1_000 },
  "--pipeline": { key: "pipeline", min: 2, max: 1_000 },
  "--keyspace": { key: "keyspace", min: 1, max: 100_000_000 },
  "--data-bytes": { key: "dataBytes", min: 1, max: 1_048_576 },
  "--hit-ratio-keys": { key: "hitRatioKeys", min: 100, max: 10_000_000 },
  "--hit-ratio-requests": { key: "hitRatioRequests", min: 0, max: 100_000_000 },
};

export const benchHelp = `casebook bench cache — this node beside redis-server, with redis-benchmark

Runs \`redis-benchmark -t set,get\` against a cache node (spawned: node src/main.ts) and a
redis-server (spawned) in the same run, interleaved, unpipelined (-c clients) and pipelined
(-P pipeline); prints medians of the rounds, ratios ours/redis, and memory (RSS and
used_memory) before and after.

Flags:
  --duration-ms <ms>   length of one SET or GET test per round (default ${benchDefaults.durationMs})
  --rounds <n>         rounds per scenario, medians reported (default ${benchDefaults.rounds})
  --clients <n>        redis-benchmark -c (default ${benchDefaults.clients})
  --pipeline <n>       redis-benchmark -P for the pipelined scenario (default ${benchDefaults.pipeline})
  --keyspace <n>       redis-benchmark -r, distinct keys (default ${benchDefaults.keyspace})
  --data-bytes <n>     redis-benchmark -d, SET value size (default ${benchDefaults.dataBytes})
  --hit-ratio-keys <n> key space of the hit-ratio study (default ${benchDefaults.hitRatioKeys})
  --hit-ratio-requests <n>  requests per trace of the hit-ratio study: LRU, LFU, Redis's sampled
                       policies, W-TinyLFU and Bélády on Zipf, scan and loop traces at 1/5/10%
                       of the key space (default ${benchDefaults.hitRatioRequests}; 0 skips it)
  --json               JSON lines instead of the markdown table
  --help               this text

Goals (issue 5): throughput ≥ 0.7× redis-server unpipelined, ≥ 0.35× pipelined.`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const args: Record<string, number | boolean> = { ...benchDefaults };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === "--help" || flag === "-h") args.help = true;
    else if (flag === "--json") continue;
    else if (Object.hasOwn(BOUNDS, flag)) {
      const { key, min, max } = BOUNDS[flag]!;
      const text = argv[++i];
      const value = Number(text);
      if (text === undefined || !Number.isInteger(value) || value < min || value > max) {
        throw cacheErrors.create("CACHE_BENCH_ARGS_INVALID", {
          detail: `${flag} needs an integer ${min}..${max}, got ${text ?? "nothing"}`,
          fields: { flag },
        });
      }
      args[key] = value;
    } else {
      throw cacheErrors.create("CACHE_BENCH_ARGS_INVALID", {
        detail: `unknown flag ${flag}; see --help`,
        fields: { flag },
      });
    }
  }
  return args as unknown as BenchArgs;
}

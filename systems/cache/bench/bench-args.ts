/**
 * Flags of `casebook bench cache`, validated with named bounds; a bad flag is a
 * CACHE_BENCH_ARGS_INVALID naming it (exit 2, see lab's bench-main).
 *
 * @example
 * parseBenchArgs(["--duration-ms", "500", "--rounds", "1", "--json"]);
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { cacheErrors } from "../src/errors.ts";

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
  /** Key counts of the memory matrix (bench/memory-matrix.ts); [0] skips it. */
  readonly memoryKeys: readonly number[];
  /** Value sizes of the memory matrix, bytes. */
  readonly memoryValues: readonly number[];
}

const cli = defineBenchArgs({
  flags: {
    durationMs: flag.integer({
      min: 100,
      max: 600_000,
      default: 2_000,
      value: "<ms>",
      help: "length of one SET or GET test per round",
    }),
    rounds: flag.integer({
      min: 1,
      max: 21,
      default: 3,
      value: "<n>",
      help: "rounds per scenario, medians reported",
    }),
    clients: flag.integer({ min: 1, max: 1_000, default: 50, value: "<n>", help: "redis-benchmark -c" }),
    pipeline: flag.integer({
      min: 2,
      max: 1_000,
      default: 16,
      value: "<n>",
      help: "redis-benchmark -P for the pipelined scenario",
    }),
    keyspace: flag.integer({
      min: 1,
      max: 100_000_000,
      default: 100_000,
      value: "<n>",
      help: "redis-benchmark -r, distinct keys",
    }),
    dataBytes: flag.integer({
      min: 1,
      max: 1_048_576,
      default: 100,
      value: "<n>",
      help: "redis-benchmark -d, SET value size",
    }),
    hitRatioKeys: flag.integer({
      min: 100,
      max: 10_000_000,
      default: 100_000,
      value: "<n>",
      help: "key space of the hit-ratio study",
    }),
    hitRatioRequests: flag.integer({
      min: 0,
      max: 100_000_000,
      default: 1_000_000,
      value: "<n>",
      help: [
        "requests per trace of the hit-ratio study: LRU, LFU, Redis's sampled",
        "policies, W-TinyLFU and Bélády on Zipf, scan and loop traces at 1/5/10%",
        "of the key space (default {default}; 0 skips it)",
      ].join("\n"),
    }),
    memoryKeys: flag.integerList({
      min: 0,
      max: 10_000_000,
      default: [100_000, 1_000_000],
      value: "<n,…>",
      help: "key counts of the memory matrix, fresh servers per cell (0 skips it)",
    }),
    memoryValues: flag.integerList({
      min: 1,
      max: 1_048_576,
      default: [16, 100, 1_024],
      value: "<bytes,…>",
      help: "value sizes of the memory matrix",
    }),
    json: flag.json("JSON lines instead of the markdown table"),
    help: flag.help({ label: "--help" }),
  },
  helpColumn: 21,
  helpBounds: false,
  invalid: (detail, flag, cause) =>
    cacheErrors.create("CACHE_BENCH_ARGS_INVALID", { detail, fields: { flag }, ...(cause ? { cause } : {}) }),
});

export const benchHelp = `casebook bench cache — this node beside redis-server, with redis-benchmark

Runs \`redis-benchmark -t set,get\` against a cache node (spawned: node src/main.ts) and a
redis-server (spawned) in the same run, interleaved, unpipelined (-c clients) and pipelined
(-P pipeline); prints medians of the rounds, ratios ours/redis, and memory (RSS and
used_memory) before and after; then the memory matrix: for each key count × value size, fresh
servers, RSS, V8 heap and used_memory per key after writes, overwrites and deletes.

Flags:
${cli.flagHelp()}

Goals (issue 5): throughput ≥ 0.7× redis-server unpipelined, ≥ 0.35× pipelined.
Goals (issue 15): RSS growth per key ≤ 2× redis-server's, used_memory per key ≤ 1.2×, at
100k and 1M keys of 100 B (the default matrix took 22 min at load average 18–25 on 2 cores).`;

/** Parses and validates the flags; throws CACHE_BENCH_ARGS_INVALID naming the flag. */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

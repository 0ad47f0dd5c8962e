/**
 * The hit-ratio bench's command line: flags, their bounds, and the --help text. Every
 * number has a bound so a typo (`--requests 1e12`) is refused instead of running for days.
 *
 * @example
 * parseHitRatioArgs(["--keys", "10000", "--requests", "100000", "--json"]).keys; // 10000
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { policyNames } from "../src/domain/hit-ratio-sim.ts";
import { hitRatioBenchErrors } from "./hit-ratio-errors.ts";

export interface HitRatioArgs {
  readonly help: boolean;
  readonly json: boolean;
  /** Key space of the Zipf and loop traces; cache sizes are 1%, 5%, 10% of it. */
  readonly keys: number;
  /** Requests per trace. */
  readonly requests: number;
  /** Seeds the traces and every policy's random choices. */
  readonly seed: string;
}

const cli = defineBenchArgs({
  flags: {
    keys: flag.integer({ min: 100, max: 2_000_000, default: 100_000, help: "key space" }),
    requests: flag.integer({ min: 1_000, max: 20_000_000, default: 1_000_000, help: "requests per trace" }),
    seed: flag.string({
      default: "ca-24",
      value: "TEXT",
      help: 'seed of the traces and policies (default "ca-24")',
    }),
    json: flag.json(
      "JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio}; peer = LRU)",
    ),
    help: flag.help(),
  },
  helpColumn: 16,
  invalid,
});

export const hitRatioHelp = `casebook bench cache (hit ratio) — CA-24: eviction policies by hit ratio at the same capacity

Replays three seeded traces through ${policyNames.length} policies (${policyNames.join(", ")})
at cache sizes of 1%, 5% and 10% of the key space, cache-aside (get; set on a miss):
  zipf   Zipf(0.99) over --keys keys
  scan   the same Zipf, with 20% of requests in sequential one-time scans of keys/5 fresh keys
  loop   keys 0..keys/5-1 in order, over and over: 2x to 20x the cache (LRU's worst case)
Pure computation: no engine, no network. The default size takes about a minute of one core.

Flags:
${cli.flagHelp()}

Output: a markdown table on stdout (progress on stderr); with --json, one JSON object per line.
`;

function invalid(detail: string, flag: string, cause?: unknown): Error {
  return hitRatioBenchErrors.create("CACHE_BENCH_ARGS_INVALID", {
    detail,
    fields: { flag },
    ...(cause ? { cause } : {}),
  });
}

/** Parses the flags; throws CACHE_BENCH_ARGS_INVALID naming the flag at fault. */
export function parseHitRatioArgs(argv: readonly string[]): HitRatioArgs {
  const args = cli.parse(argv);
  if (args.requests < args.keys) {
    throw invalid(`--requests (${args.requests}) must be >= --keys (${args.keys})`, "--requests");
  }
  return args;
}

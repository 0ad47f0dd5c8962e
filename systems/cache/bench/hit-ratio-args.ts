/**
 * The hit-ratio bench's command line: flags, their bounds, and the --help text. Every
 * number has a bound so a typo (`--requests 1e12`) is refused instead of running for days.
 *
 * @example
 * parseHitRatioArgs(["--keys", "10000", "--requests", "100000", "--json"]).keys; // 10000
 */
import { parseArgs } from "node:util";
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

/** Bounds of each numeric flag, inclusive. */
export const hitRatioArgBounds = {
  keys: { min: 100, max: 2_000_000, default: 100_000 },
  requests: { min: 1_000, max: 20_000_000, default: 1_000_000 },
} as const;

export const hitRatioHelp = `casebook bench cache (hit ratio) — CA-24: eviction policies by hit ratio at the same capacity

Replays three seeded traces through ${policyNames.length} policies (${policyNames.join(", ")})
at cache sizes of 1%, 5% and 10% of the key space, cache-aside (get; set on a miss):
  zipf   Zipf(0.99) over --keys keys
  scan   the same Zipf, with 20% of requests in sequential one-time scans of keys/5 fresh keys
  loop   keys 0..keys/5-1 in order, over and over: 2x to 20x the cache (LRU's worst case)
Pure computation: no engine, no network. The default size takes about a minute of one core.

Flags:
  --keys N        key space (default ${hitRatioArgBounds.keys.default}; ${hitRatioArgBounds.keys.min}..${hitRatioArgBounds.keys.max})
  --requests N    requests per trace (default ${hitRatioArgBounds.requests.default}; ${hitRatioArgBounds.requests.min}..${hitRatioArgBounds.requests.max})
  --seed TEXT     seed of the traces and policies (default "ca-24")
  --json          JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio}; peer = LRU)
  -h, --help      this text

Output: a markdown table on stdout (progress on stderr); with --json, one JSON object per line.
`;

function invalid(detail: string, flag: string): Error {
  return hitRatioBenchErrors.create("CACHE_BENCH_ARGS_INVALID", { detail, fields: { flag } });
}

function integer(flag: "keys" | "requests", raw: string | undefined): number {
  const bounds = hitRatioArgBounds[flag];
  if (raw === undefined) return bounds.default;
  const value = Number(raw.replaceAll("_", ""));
  if (!Number.isInteger(value) || value < bounds.min || value > bounds.max) {
    throw invalid(`--${flag}: must be an integer in ${bounds.min}..${bounds.max}, got ${raw}`, `--${flag}`);
  }
  return value;
}

/** Parses the flags; throws CACHE_BENCH_ARGS_INVALID naming the flag at fault. */
export function parseHitRatioArgs(argv: readonly string[]): HitRatioArgs {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        help: { type: "boolean", short: "h" },
        json: { type: "boolean" },
        keys: { type: "string" },
        requests: { type: "string" },
        seed: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw invalid(error instanceof Error ? error.message : String(error), "argv");
  }
  const keys = integer("keys", values.keys as string | undefined);
  const requests = integer("requests", values.requests as string | undefined);
  if (requests < keys) throw invalid(`--requests (${requests}) must be >= --keys (${keys})`, "--requests");
  return {
    help: values.help === true,
    json: values.json === true,
    keys,
    requests,
    seed: (values.seed as string | undefined) ?? "ca-24",
  };
}

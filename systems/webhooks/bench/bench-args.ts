/**
 * The webhooks bench's command line: flags, their bounds and the --help text. Every number
 * has a named bound so a typo (`--backlog 50000000`) is refused instead of running for a day.
 *
 * @example
 * const args = parseBenchArgs(["--json", "--workers", "1,4", "--backlog", "50000"]);
 * args.workers; // [1, 4]
 */
import { parseArgs } from "node:util";
import { benchErrors } from "./bench-errors.ts";

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  /** Worker process counts of the drain runs. */
  readonly workers: readonly number[];
  /** Deliveries queued before each drain run (events × subscriptions). */
  readonly backlog: number;
  /** Subscriptions per event (the seed's average is 3). */
  readonly subscriptions: number;
  /** Open-loop arrival rate of the latency run, in deliveries (tasks) per second. */
  readonly rate: number;
  /** Measured time of the latency run, warmup excluded. */
  readonly durationMs: number;
  readonly warmupMs: number;
  /** Sends in flight per worker process. */
  readonly maxInFlight: number;
  /** PostgreSQL connections per worker process. */
  readonly pool: number;
  /** Payload size of each event, in bytes (the seed's 2 KiB). */
  readonly payloadBytes: number;
}

/** Bounds of each numeric flag, inclusive. */
export const argBounds = {
  workers: { min: 1, max: 16, default: [1, 2, 4] },
  backlog: { min: 10, max: 1_000_000, default: 20_000 },
  subscriptions: { min: 1, max: 10, default: 3 },
  rate: { min: 1, max: 10_000, default: 350 },
  durationMs: { min: 1_000, max: 600_000, default: 10_000 },
  warmupMs: { min: 0, max: 60_000, default: 2_000 },
  maxInFlight: { min: 1, max: 1_000, default: 64 },
  pool: { min: 1, max: 50, default: 8 },
  payloadBytes: { min: 64, max: 65_536, default: 2_048 },
} as const;

export const benchHelp = `casebook bench webhooks — end-to-end deliveries (commit → the receiver's 2xx) on real PostgreSQL

Target: $DATABASE_URL when set, else the local PostgreSQL at 127.0.0.1:5432/test; the bench works in
a fresh schema of its own, dropped after. The receiver is a node:http server on 127.0.0.1 in the bench
process that verifies every signature (standardwebhooks) and counts every webhook-id.

Scenarios:
  drain      a backlog of --backlog committed deliveries (events × --subscriptions), drained by N worker
             PROCESSES for each N in --workers: deliveries/s from the first 2xx to the last, drain time,
             and duplicates (a webhook-id received twice: must be 0)
  latency    1 worker process, events ingested open loop at --rate deliveries/s (the seed's peak is 350
             tasks/s = 347.2 rounded up), through the outbox relay and fan-out: commit→2xx p50/p90/p99/max,
             measured at the receiver from each event's commit time
The seed assumes 60 attempts/s per worker; it is printed beside the single-process drain as the peer.

Goals (the issue): one worker process ≥ 20× the seed's 60 attempts/s (1,200/s); p99 commit→2xx < 250 ms at 350/s.

Flags:
  --json               JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio})
  --workers LIST       worker process counts (default ${argBounds.workers.default.join(",")}; each ${argBounds.workers.min}..${argBounds.workers.max})
  --backlog N          deliveries queued before each drain (default ${argBounds.backlog.default}, ~15 s per run here; the issue's
                       50000 takes ~30–60 s per run; ${argBounds.backlog.min}..${argBounds.backlog.max})
  --subscriptions N    subscriptions per event (default ${argBounds.subscriptions.default}; ${argBounds.subscriptions.min}..${argBounds.subscriptions.max})
  --rate N             latency run arrival rate, deliveries/s (default ${argBounds.rate.default}; ${argBounds.rate.min}..${argBounds.rate.max})
  --duration-ms N      latency run measured time (default ${argBounds.durationMs.default}; ${argBounds.durationMs.min}..${argBounds.durationMs.max})
  --warmup-ms N        latency run unmeasured lead-in (default ${argBounds.warmupMs.default}; ${argBounds.warmupMs.min}..${argBounds.warmupMs.max})
  --max-in-flight N    sends in flight per worker process (default ${argBounds.maxInFlight.default}; ${argBounds.maxInFlight.min}..${argBounds.maxInFlight.max})
  --pool N             PostgreSQL connections per worker process (default ${argBounds.pool.default}; ${argBounds.pool.min}..${argBounds.pool.max})
  --payload-bytes N    event payload size (default ${argBounds.payloadBytes.default}; ${argBounds.payloadBytes.min}..${argBounds.payloadBytes.max})
  -h, --help           this text

Output: a markdown table and the goals on stdout (progress on stderr); with --json, one JSON object per line.
`;

function invalid(detail: string, flag: string): Error {
  return benchErrors.create("WEBHOOKS_BENCH_ARGS_INVALID", { detail, fields: { flag } });
}

function integer(raw: string | undefined, flag: string, bounds: { min: number; max: number }): number {
  const value = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw invalid(`--${flag}: must be an integer in [${bounds.min}, ${bounds.max}], got ${raw}`, flag);
  }
  return value;
}

function workerList(raw: string | undefined): number[] {
  if (raw === undefined) return [...argBounds.workers.default];
  const counts = raw.split(",").map((part) => integer(part.trim(), "workers", argBounds.workers));
  return [...new Set(counts)].sort((a, b) => a - b);
}

const NUMERIC = {
  backlog: "backlog",
  subscriptions: "subscriptions",
  rate: "rate",
  durationMs: "duration-ms",
  warmupMs: "warmup-ms",
  maxInFlight: "max-in-flight",
  pool: "pool",
  payloadBytes: "payload-bytes",
} as const;

/**
 * Parses and validates the flags; throws WEBHOOKS_BENCH_ARGS_INVALID naming the flag.
 *
 * @example
 * parseBenchArgs(["--workers", "2", "--backlog", "1000"]).backlog; // 1000
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  let values: Record<string, string | boolean | undefined>;
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    help: { type: "boolean", short: "h" },
    json: { type: "boolean" },
    workers: { type: "string" },
  };
  for (const flag of Object.values(NUMERIC)) options[flag] = { type: "string" };
  try {
    ({ values } = parseArgs({ args: [...argv], strict: true, allowPositionals: false, options }));
  } catch (cause) {
    throw benchErrors.create("WEBHOOKS_BENCH_ARGS_INVALID", {
      detail: `${(cause as Error).message}; see --help`,
      cause,
    });
  }
  const numbers = Object.fromEntries(
    Object.entries(NUMERIC).map(([key, flag]) => {
      const bounds = argBounds[key as keyof typeof NUMERIC];
      const raw = values[flag] as string | undefined;
      return [key, raw === undefined ? bounds.default : integer(raw, flag, bounds)];
    }),
  ) as Record<keyof typeof NUMERIC, number>;
  return {
    help: values.help === true,
    json: values.json === true,
    workers: workerList(values.workers as string | undefined),
    ...numbers,
  };
}

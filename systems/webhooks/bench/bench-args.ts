/**
 * The webhooks bench's command line: flags, their bounds and the --help text. Every number
 * has a named bound so a typo (`--backlog 50000000`) is refused instead of running for a day.
 *
 * @example
 * const args = parseBenchArgs(["--json", "--workers", "1,4", "--backlog", "50000"]);
 * args.workers; // [1, 4]
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
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

const cli = defineBenchArgs({
  flags: {
    json: flag.json(),
    workers: flag.integerList({ min: 1, max: 16, default: [1, 2, 4], help: "worker process counts" }),
    backlog: flag.integer({
      min: 10,
      max: 1_000_000,
      default: 20_000,
      help: "deliveries queued before each drain (default {default}, ~15 s per run here; the issue's\n50000 takes ~30–60 s per run; {min}..{max})",
    }),
    subscriptions: flag.integer({ min: 1, max: 10, default: 3, help: "subscriptions per event" }),
    rate: flag.integer({ min: 1, max: 10_000, default: 350, help: "latency run arrival rate, deliveries/s" }),
    durationMs: flag.integer({
      min: 1_000,
      max: 600_000,
      default: 10_000,
      help: "latency run measured time",
    }),
    warmupMs: flag.integer({ min: 0, max: 60_000, default: 2_000, help: "latency run unmeasured lead-in" }),
    maxInFlight: flag.integer({
      min: 1,
      max: 1_000,
      default: 64,
      help: "sends in flight per worker process",
    }),
    pool: flag.integer({ min: 1, max: 50, default: 8, help: "PostgreSQL connections per worker process" }),
    payloadBytes: flag.integer({ min: 64, max: 65_536, default: 2_048, help: "event payload size" }),
    help: flag.help(),
  },
  helpColumn: 21,
  invalid: (detail, flag, cause) =>
    benchErrors.create("WEBHOOKS_BENCH_ARGS_INVALID", { detail, fields: { flag }, cause }),
});

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
${cli.flagHelp()}

Output: a markdown table and the goals on stdout (progress on stderr); with --json, one JSON object per line.
`;

/**
 * Parses and validates the flags; throws WEBHOOKS_BENCH_ARGS_INVALID naming the flag.
 *
 * @example
 * parseBenchArgs(["--workers", "2", "--backlog", "1000"]).backlog; // 1000
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

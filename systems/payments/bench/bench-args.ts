/**
 * The payments bench's command line: flags, their bounds and the --help text. Every
 * number has a named bound so a typo (`--duration-ms 50000000`) is refused instead of
 * running for a day.
 *
 * @example
 * const args = parseBenchArgs(["--json", "--clients", "8,16"]);
 * args.clients; // [8, 16]
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { benchErrors } from "./bench-errors.ts";

export type Scenario = "ledger" | "saga";
export const scenarios: readonly Scenario[] = ["ledger", "saga"];

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  /** Which parts run: the ledger beside pgbench, the saga end to end, or both. */
  readonly scenarios: readonly Scenario[];
  /** Client counts, each run by pgbench and by every ledger scenario. */
  readonly clients: readonly number[];
  /** The saga's closed-loop client counts (its own list: one process peaks past the ledger's counts). */
  readonly sagaClients: readonly number[];
  /** Measured time of one run, warmup excluded (pgbench runs it rounded up to whole seconds). */
  readonly durationMs: number;
  /** Unmeasured lead-in of each ledger run (JIT, connections, buffer cache). */
  readonly warmupMs: number;
  /** Ledger accounts the random pairs are drawn from. */
  readonly accounts: number;
  /** Transfers per `createTransfers` call in the batch scenario: one run per size. */
  readonly batchSize: readonly number[];
  /** The acquirer simulator's latency per call in the saga scenario. */
  readonly sagaLatencyMs: number;
  /** The saga's open-loop rate; 0 = half the best closed-loop payments/s of this run. */
  readonly sagaRatePerS: number;
  /** The service's own limit on acquirer calls per second (PAYMENTS_ACQUIRER_RATE_PER_S). */
  readonly acquirerRatePerS: number;
}

const cli = defineBenchArgs({
  flags: {
    json: flag.json(),
    scenarios: flag.choiceList(scenarios, {
      help: `comma-separated parts to run: ${scenarios.join(",")} (default all)`,
    }),
    clients: flag.integerList({
      min: 1,
      max: 64,
      default: [8, 16, 32],
      help: "comma-separated client counts",
    }),
    sagaClients: flag.integerList({
      min: 1,
      max: 128,
      default: [8, 16, 32, 64],
      help: "comma-separated client counts of the saga's closed loop (one process peaks past the ledger's counts)",
    }),
    durationMs: flag.integer({ min: 1_000, max: 600_000, default: 5_000, help: "measured time per run" }),
    warmupMs: flag.integer({
      min: 0,
      max: 60_000,
      default: 1_000,
      help: "unmeasured lead-in per ledger run",
    }),
    accounts: flag.integer({ min: 2, max: 1_000_000, default: 100_000, help: "ledger accounts" }),
    // The ledger's own bound (LedgerRepositoryOptions.maxBatch) is 1 000 per call.
    batchSize: flag.integerList({
      min: 1,
      max: 1_000,
      default: [100, 1_000],
      help: "comma-separated transfers per batch, one batch run per size",
    }),
    sagaLatencyMs: flag.integer({
      min: 0,
      max: 1_000,
      default: 5,
      help: "acquirer simulator latency per call",
    }),
    sagaRatePerS: flag.integer({
      min: 0,
      max: 100_000,
      default: 0,
      help: "open-loop payments/s (default: half the best closed-loop payments/s; {min}..{max})",
    }),
    // Far above what one process reaches here: the bench measures the saga, not the contract's limit.
    acquirerRatePerS: flag.integer({
      min: 1,
      max: 1_000_000,
      default: 100_000,
      help: "the service's limit on acquirer calls/s",
    }),
    help: flag.help(),
  },
  invalid: (detail, flag, cause) =>
    benchErrors.create("PAYMENTS_BENCH_ARGS_INVALID", { detail, fields: { flag }, cause }),
});

export const benchHelp = `casebook bench payments — ledger transfers/s and p99 beside pgbench -b tpcb-like, and payments/s
end to end through the saga, on one PostgreSQL, in one run

Target: $DATABASE_URL when set, else a throw-away PostgreSQL spawned for the run with PostgreSQL's
default settings (fsync on, synchronous_commit on), stopped after. The settings are printed.
Ours runs in a schema of its own, pgbench in another (PGOPTIONS search_path); both are dropped.

Per client count N (N client loops, each with its own pool connection, closed loop):
  pgbench   pgbench -b tpcb-like -c N -j N -T <duration> -n, on tables of scale = max(--clients),
            so each client has a branch row of its own to update (TPC-B's one hot row per branch)
  single    LedgerRepository.transfer through the group commit (the default): the N clients'
            transfers, random pairs over --accounts accounts, share database transactions
  serial    the same with group commit off: one database transaction per transfer (the baseline)
  hot       group commit, every transfer out of ONE account: one row update per group
  batch     LedgerRepository.createTransfers of --batch-size random-pair transfers (TigerBeetle's
            create_transfers: one transaction, a result per transfer); reported in transfers/s
  saga      POST /v1/payments (capture=true, a unique Idempotency-Key each) through the payments service
            (src/main.ts as a child process, in a schema of its own) and the acquirer simulator (a child,
            --saga-latency-ms per call: authorize and capture make two): closed loop at each of --saga-clients,
            then an open loop at --saga-rate-per-s for p50/p99 from the intended send time. After each run
            the acquirer's counters must show one authorization per payment and no repeated call.

Goals (issue 14): single ≥ 1.5× pgbench's TPS, hot ≥ 1.0×, batch ≥ 10× in transfers/s, and the
group-committed p99 ≤ 2× the serial p99. Figures are printed with the machine's load average.

Flags:
${cli.flagHelp()}

Output: a markdown table and the goals on stdout (progress on stderr); with --json, one JSON object per line.
`;

/**
 * Parses and validates the flags; throws PAYMENTS_BENCH_ARGS_INVALID naming the flag.
 *
 * @example
 * parseBenchArgs(["--clients", "4", "--duration-ms", "2000"]).clients; // [4]
 */
export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

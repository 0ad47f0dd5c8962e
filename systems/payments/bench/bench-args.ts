/**
 * The payments bench's command line: flags, their bounds and the --help text. Every
 * number has a named bound so a typo (`--duration-ms 50000000`) is refused instead of
 * running for a day.
 *
 * @example
 * const args = parseBenchArgs(["--json", "--clients", "8,16"]);
 * args.clients; // [8, 16]
 */
import { parseArgs } from "node:util";
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
  /** Measured time of one run, warmup excluded (pgbench runs it rounded up to whole seconds). */
  readonly durationMs: number;
  /** Unmeasured lead-in of each ledger run (JIT, connections, buffer cache). */
  readonly warmupMs: number;
  /** Ledger accounts the random pairs are drawn from. */
  readonly accounts: number;
  /** Transfers per `transferBatch` call in the batch scenario. */
  readonly batchSize: number;
  /** The acquirer simulator's latency per call in the saga scenario. */
  readonly sagaLatencyMs: number;
  /** The saga's open-loop rate; 0 = half the best closed-loop payments/s of this run. */
  readonly sagaRatePerS: number;
  /** The service's own limit on acquirer calls per second (PAYMENTS_ACQUIRER_RATE_PER_S). */
  readonly acquirerRatePerS: number;
}

/** Bounds of each numeric flag, inclusive. */
export const argBounds = {
  clients: { min: 1, max: 64, default: [8, 16, 32] },
  durationMs: { min: 1_000, max: 600_000, default: 5_000 },
  warmupMs: { min: 0, max: 60_000, default: 1_000 },
  accounts: { min: 2, max: 1_000_000, default: 100_000 },
  // The ledger's own bound (LedgerRepositoryOptions.maxBatch) is 1 000 per call.
  batchSize: { min: 1, max: 1_000, default: 100 },
  sagaLatencyMs: { min: 0, max: 1_000, default: 5 },
  sagaRatePerS: { min: 0, max: 100_000, default: 0 },
  // Far above what one process reaches here: the bench measures the saga, not the contract's limit.
  acquirerRatePerS: { min: 1, max: 1_000_000, default: 100_000 },
} as const;

export const benchHelp = `casebook bench payments — ledger transfers/s and p99 beside pgbench -b tpcb-like, and payments/s
end to end through the saga, on one PostgreSQL, in one run

Target: $DATABASE_URL when set, else a throw-away PostgreSQL spawned for the run with PostgreSQL's
default settings (fsync on, synchronous_commit on), stopped after. The settings are printed.
Ours runs in a schema of its own, pgbench in another (PGOPTIONS search_path); both are dropped.

Per client count N (N client loops, each with its own pool connection, closed loop):
  pgbench   pgbench -b tpcb-like -c N -j N -T <duration> -n, on tables of scale = max(--clients),
            so each client has a branch row of its own to update (TPC-B's one hot row per branch)
  single    LedgerRepository.transfer: one posted transfer per database transaction, random pairs
            over --accounts accounts
  hot       the same, every transfer out of ONE account: all N clients queue on its row lock
  batch     LedgerRepository.transferBatch of --batch-size random-pair transfers, atomic per batch
            (one transaction, all or nothing); reported in transfers/s
  saga      POST /v1/payments (capture=true, a unique Idempotency-Key each) through the payments service
            (src/main.ts as a child process, in a schema of its own) and the acquirer simulator (a child,
            --saga-latency-ms per call: authorize and capture make two): closed loop at each client count,
            then an open loop at --saga-rate-per-s for p50/p99 from the intended send time. After each run
            the acquirer's counters must show one authorization per payment and no repeated call.

Goals (the issue): single ≥ 1.0× pgbench's TPS; batch ≥ 10× pgbench's TPS in transfers/s.

Flags:
  --json              JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio})
  --scenarios LIST    comma-separated parts to run: ${scenarios.join(",")} (default all)
  --clients LIST      comma-separated client counts (default ${argBounds.clients.default.join(",")}; each ${argBounds.clients.min}..${argBounds.clients.max})
  --duration-ms N     measured time per run (default ${argBounds.durationMs.default}; ${argBounds.durationMs.min}..${argBounds.durationMs.max})
  --warmup-ms N       unmeasured lead-in per ledger run (default ${argBounds.warmupMs.default}; ${argBounds.warmupMs.min}..${argBounds.warmupMs.max})
  --accounts N        ledger accounts (default ${argBounds.accounts.default}; ${argBounds.accounts.min}..${argBounds.accounts.max})
  --batch-size N      transfers per batch (default ${argBounds.batchSize.default}; ${argBounds.batchSize.min}..${argBounds.batchSize.max})
  --saga-latency-ms N acquirer simulator latency per call (default ${argBounds.sagaLatencyMs.default}; ${argBounds.sagaLatencyMs.min}..${argBounds.sagaLatencyMs.max})
  --saga-rate-per-s N open-loop payments/s (default: half the best closed-loop payments/s; ${argBounds.sagaRatePerS.min}..${argBounds.sagaRatePerS.max})
  --acquirer-rate-per-s N  the service's limit on acquirer calls/s (default ${argBounds.acquirerRatePerS.default}; ${argBounds.acquirerRatePerS.min}..${argBounds.acquirerRatePerS.max})
  -h, --help          this text

Output: a markdown table and the goals on stdout (progress on stderr); with --json, one JSON object per line.
`;

function invalid(detail: string, flag: string): Error {
  return benchErrors.create("PAYMENTS_BENCH_ARGS_INVALID", { detail, fields: { flag } });
}

function integer(raw: string | undefined, flag: string, bounds: { min: number; max: number }): number {
  const value = Number(raw);
  if (raw === undefined || !/^\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw invalid(`--${flag}: must be an integer in [${bounds.min}, ${bounds.max}], got ${raw}`, flag);
  }
  return value;
}

function scenarioList(raw: string | undefined): Scenario[] {
  if (raw === undefined) return [...scenarios];
  const picked = raw.split(",").map((part) => part.trim());
  for (const name of picked) {
    if (!scenarios.includes(name as Scenario))
      throw invalid(`--scenarios: ${name} is not one of ${scenarios.join(", ")}`, "scenarios");
  }
  return scenarios.filter((name) => picked.includes(name));
}

function clientList(raw: string | undefined): number[] {
  if (raw === undefined) return [...argBounds.clients.default];
  const counts = raw.split(",").map((part) => integer(part.trim(), "clients", argBounds.clients));
  return [...new Set(counts)].sort((a, b) => a - b);
}

/**
 * Parses and validates the flags; throws PAYMENTS_BENCH_ARGS_INVALID naming the flag.
 *
 * @example
 * parseBenchArgs(["--clients", "4", "--duration-ms", "2000"]).clients; // [4]
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
        clients: { type: "string" },
        "duration-ms": { type: "string" },
        "warmup-ms": { type: "string" },
        accounts: { type: "string" },
        "batch-size": { type: "string" },
        scenarios: { type: "string" },
        "saga-latency-ms": { type: "string" },
        "saga-rate-per-s": { type: "string" },
        "acquirer-rate-per-s": { type: "string" },
      },
    }));
  } catch (cause) {
    throw benchErrors.create("PAYMENTS_BENCH_ARGS_INVALID", {
      detail: `${(cause as Error).message}; see --help`,
      cause,
    });
  }
  const text = (name: string) => values[name] as string | undefined;
  const orDefault = (name: string, bounds: { min: number; max: number; default: number }) =>
    text(name) === undefined ? bounds.default : integer(text(name), name, bounds);
  return {
    help: values.help === true,
    json: values.json === true,
    clients: clientList(text("clients")),
    durationMs: orDefault("duration-ms", argBounds.durationMs),
    warmupMs: orDefault("warmup-ms", argBounds.warmupMs),
    accounts: orDefault("accounts", argBounds.accounts),
    batchSize: orDefault("batch-size", argBounds.batchSize),
    scenarios: scenarioList(text("scenarios")),
    sagaLatencyMs: orDefault("saga-latency-ms", argBounds.sagaLatencyMs),
    sagaRatePerS: orDefault("saga-rate-per-s", argBounds.sagaRatePerS),
    acquirerRatePerS: orDefault("acquirer-rate-per-s", argBounds.acquirerRatePerS),
  };
}

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

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
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
}

/** Bounds of each numeric flag, inclusive. */
export const argBounds = {
  clients: { min: 1, max: 64, default: [8, 16, 32] },
  durationMs: { min: 1_000, max: 600_000, default: 5_000 },
  warmupMs: { min: 0, max: 60_000, default: 1_000 },
  accounts: { min: 2, max: 1_000_000, default: 100_000 },
  // The ledger's own bound (LedgerRepositoryOptions.maxBatch) is 1 000 per call.
  batchSize: { min: 1, max: 1_000, default: 100 },
} as const;

export const benchHelp = `casebook bench payments — ledger transfers/s and p99 beside pgbench -b tpcb-like, on one PostgreSQL, in one run

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
End-to-end payments/s through the saga is not measured yet (no saga orchestrator in src/workers).

Goals (the issue): single ≥ 1.0× pgbench's TPS; batch ≥ 10× pgbench's TPS in transfers/s.

Flags:
  --json              JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio})
  --clients LIST      comma-separated client counts (default ${argBounds.clients.default.join(",")}; each ${argBounds.clients.min}..${argBounds.clients.max})
  --duration-ms N     measured time per run (default ${argBounds.durationMs.default}; ${argBounds.durationMs.min}..${argBounds.durationMs.max})
  --warmup-ms N       unmeasured lead-in per ledger run (default ${argBounds.warmupMs.default}; ${argBounds.warmupMs.min}..${argBounds.warmupMs.max})
  --accounts N        ledger accounts (default ${argBounds.accounts.default}; ${argBounds.accounts.min}..${argBounds.accounts.max})
  --batch-size N      transfers per batch (default ${argBounds.batchSize.default}; ${argBounds.batchSize.min}..${argBounds.batchSize.max})
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
  };
}

/**
 * Our side of the bench: the ledger's `LedgerRepository` on real PostgreSQL, driven by
 * lab's closed loop. N client loops share a pool of exactly N connections, so each loop
 * holds its own connection for each transaction, like N pgbench clients.
 *
 * Four shapes of load, each over the same accounts (none no-overdraft, so a random
 * transfer is never refused):
 * - `single`: one `transfer` per request between two accounts drawn at random, through the
 *   group commit (the default): the N clients' transfers share database transactions;
 * - `single-serial`: the same with group commit off: one database transaction per transfer
 *   (the baseline, and the p99 the group commit's p99 is compared with);
 * - `hot`: every transfer out of ONE account (a merchant's settlement account), group commit
 *   on: one balance-row update per group instead of N clients queueing on that row's lock;
 * - `batch`: `createTransfers` of `batchSize` random-pair transfers (TigerBeetle's
 *   create_transfers: one database transaction, per-transfer results).
 *
 * @example
 * const ledger = await openBenchLedger(url, { accounts: 1_000, log });
 * const run = await runLedgerLoad(ledger, { shape: "single", clients: 8, durationMs: 5_000, warmupMs: 1_000, batchSize: 100, log });
 * run.transfersPerS; run.report.latencyMs.p99;
 * await ledger.drop();
 */
import { applyMigrations, readMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { int, type RandomSource, seededRandom } from "@casebook/kit/random";
import { type LoadReport, runClosedLoop } from "@casebook/lab/load-generator";
import { uniqueName } from "@casebook/lab/test-engines";
import type { TransferRequest } from "../src/domain/ledger.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";

export type LoadShape = "single" | "single-serial" | "hot" | "batch";
/** In the order they run at each client count; `batch` runs once per batch size. */
export const loadShapes: readonly LoadShape[] = ["single", "single-serial", "hot", "batch"];

export interface BenchLedger {
  readonly url: string;
  readonly schema: string;
  readonly accountIds: readonly bigint[];
  /** Sum of (credits − debits) over every balance row: 0 unless the ledger lost a cent. */
  imbalance(): Promise<bigint>;
  drop(): Promise<void>;
}

export interface LedgerRun {
  readonly shape: LoadShape;
  readonly clients: number;
  /** Transfers per request of the batch shape (1 for the others). */
  readonly batchSize: number;
  /** Requests are transfers (single, hot) or batches (batch); latency is per request. */
  readonly report: LoadReport;
  /** Committed transfers per second of the measured window. */
  readonly transfersPerS: number;
  /** This process's CPU (user + system) per committed transfer, µs, warmup included: the client's cost. */
  readonly clientCpuUsPerTransfer: number;
}

const SYSTEM = "payments";
const MIGRATIONS_DIR = new URL("../src/store/migrations/", import.meta.url);
/** Only the ledger's migrations: the bench measures the ledger, not the rest of the schema. */
const LEDGER_MIGRATION = /^\d{3}_ledger/;
/** A transfer (or a batch) that takes this long counts as an error; far beyond any healthy p99. */
const requestTimeoutMs = 30_000;
/** Amounts are 1..this many minor units. */
const maxAmountMinor = 10_000;

async function openPool(url: string, schema: string, maxConnections: number): Promise<Database> {
  return openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections, connectTimeoutMs: 30_000 } });
}

/**
 * Opens `count` accounts in one statement: the same two rows per account `createAccount` writes,
 * without 100 000 round trips. Setup only — nothing here is measured.
 */
async function openAccounts(db: Database, count: number): Promise<bigint[]> {
  const { rows } = await db.query<{ id: bigint }>(
    `WITH a AS (INSERT INTO accounts (currency) SELECT 'USD' FROM generate_series(1, $1::int4) RETURNING id),
          b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, false FROM a)
     SELECT id FROM a ORDER BY id`,
    [count],
  );
  return rows.map((row) => row.id);
}

/**
 * A fresh schema holding the ledger and `accounts` USD accounts.
 *
 * @example
 * const ledger = await openBenchLedger(target.url, { accounts: 1_000, log });
 */
export async function openBenchLedger(
  url: string,
  options: { accounts: number; log: (line: string) => void },
): Promise<BenchLedger> {
  const schema = uniqueName("bench_ledger");
  const admin = await openPool(url, schema, 1);
  const drop = async () => {
    try {
      await admin.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    } finally {
      await admin.close();
    }
  };
  try {
    const migrations = (await readMigrations(MIGRATIONS_DIR)).filter((m) => LEDGER_MIGRATION.test(m.name));
    await applyMigrations(admin, migrations);
    options.log(`ledger schema ${schema}: opening ${options.accounts} accounts`);
    const accountIds = await openAccounts(admin, options.accounts);
    const imbalance = async () => {
      const { rows } = await admin.query<{ total: bigint }>(
        "SELECT COALESCE(sum(posted_credits - posted_debits), 0)::int8 AS total FROM account_balances",
      );
      return rows[0]!.total;
    };
    return { url, schema, accountIds, imbalance, drop };
  } catch (error) {
    await drop();
    throw error;
  }
}

/** Builds the next request of one shape: keys unique per run, pairs from a seeded source. */
function requestMaker(ledger: BenchLedger, shape: LoadShape, rng: RandomSource, runId: string) {
  const ids = ledger.accountIds;
  let sequence = 0;
  const one = (): TransferRequest => {
    // hot: account 0 pays everyone; else two distinct accounts at random.
    const from = shape === "hot" ? 0 : int(rng, ids.length);
    const to = (from + 1 + int(rng, ids.length - 1)) % ids.length;
    sequence += 1;
    const amount = BigInt(1 + int(rng, maxAmountMinor));
    return { idemKey: `${runId}:${sequence}`, from: ids[from]!, to: ids[to]!, amount, currency: "USD" };
  };
  return one;
}

/**
 * Runs one shape at `clients` for warmup + duration, on a pool of `clients` connections.
 *
 * @example
 * await runLedgerLoad(ledger, { shape: "batch", clients: 16, durationMs: 5_000, warmupMs: 1_000, batchSize: 100, log });
 */
export async function runLedgerLoad(
  ledger: BenchLedger,
  options: {
    shape: LoadShape;
    clients: number;
    durationMs: number;
    warmupMs: number;
    batchSize: number;
    log: (line: string) => void;
  },
): Promise<LedgerRun> {
  const { shape, clients, batchSize } = options;
  const db = await openPool(ledger.url, ledger.schema, clients);
  try {
    const groupCommit = shape === "single-serial" ? false : {};
    const repository = new LedgerRepository(db, { maxBatch: Math.max(batchSize, 1), groupCommit });
    const next = requestMaker(ledger, shape, seededRandom(`${shape}-${clients}`), uniqueName(shape));
    const task =
      shape === "batch"
        ? async () => {
            const outcomes = await repository.createTransfers(
              Array.from({ length: batchSize }, () => ({ request: next() })),
            );
            // Random pairs of overdraft-allowed accounts: every transfer must be ok, or the run measured failures.
            const failed = outcomes.find((outcome) => outcome.code !== "ok");
            if (failed !== undefined) throw new Error(`a batch transfer was ${failed.code}`);
          }
        : () => repository.transfer(next());
    options.log(`ledger ${shape}, ${clients} clients`);
    const cpuBefore = process.cpuUsage();
    const report = await runClosedLoop({
      concurrency: clients,
      durationMs: options.warmupMs + options.durationMs,
      warmupMs: options.warmupMs,
      requestTimeoutMs,
      task,
      onProgress: (p) =>
        options.log(
          `  ${shape} c=${clients}: ${p.phase} ${(p.elapsedMs / 1_000).toFixed(1)} s, ${p.completed} done, ${p.errors} errors`,
        ),
    });
    const cpu = process.cpuUsage(cpuBefore);
    const perRequest = shape === "batch" ? batchSize : 1;
    const committed = report.ok * perRequest;
    const transfersPerS = report.measuredMs > 0 ? (committed * 1_000) / report.measuredMs : 0;
    const allCommitted = Math.max(1, (report.ok + report.warmupCount) * perRequest);
    return {
      shape,
      clients,
      batchSize: perRequest,
      report,
      transfersPerS,
      clientCpuUsPerTransfer: (cpu.user + cpu.system) / allCommitted,
    };
  } finally {
    await db.close();
  }
}

/**
 * Command line for the reconciliation job (PY-10), the payments system's `reconcile` tool:
 *
 *   npx casebook payments reconcile <file.csv | --date YYYY-MM-DD> [--date D]
 *   node systems/payments/src/tools/reconcile.ts …   (the same, without the CLI)
 *
 * With a file, it is reconciled for `--date`, or the date in its name (`settlement-2026-10-22.csv`),
 * or the date of its rows. With only `--date`, the file is fetched from ACQUIRER_URL; `--date today`
 * is the current UTC date (an acquirer simulator started with ACQUIRER_SETTLEMENT=immediate
 * publishes it at once). The database is DATABASE_URL (or the embedded PGlite in
 * $CASEBOOK_DATA/payments); migrations are applied first.
 * Prints a summary table (file rows, matched, differences by kind, new exceptions); exit code 0,
 * or 1 when the run failed (a file that cannot be read or parsed, in one line, no stack), or 2
 * for a usage error.
 *
 * @example
 * const code = await runReconcileCli(["--date", "2026-10-22"], process.env, console.log);
 */
import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { parseSettlementCsv } from "../sim/settlement-file.ts";
import type { RunSummary } from "../store/reconciliation-repository.ts";
import { reconcileDate, type SettlementSource } from "../workers/reconciler.ts";

/** The contracted acquirer fee when PAYMENTS_ACQUIRER_FEE_BPS is unset: 1.5 %. */
export const DEFAULT_FEE_BPS = 150;

export const USAGE = `usage: casebook payments reconcile <file.csv | --date YYYY-MM-DD> [--date YYYY-MM-DD]
       (or: node systems/payments/src/tools/reconcile.ts …)

  file.csv        a settlement file (columns of the acquirer's D+1 file); its date is --date,
                  or the YYYY-MM-DD in its name, or the date of its rows
  --date D        the UTC settlement date (or "today"); without a file, fetched from $ACQUIRER_URL
  --help          this text

env: DATABASE_URL (PostgreSQL; unset = embedded PGlite in $CASEBOOK_DATA/payments), ACQUIRER_URL,
     PAYMENTS_ACQUIRER_FEE_BPS (the contracted fee on captures, basis points; default ${DEFAULT_FEE_BPS})`;

const DATE_IN_NAME = /(\d{4}-\d{2}-\d{2})/;

/** PAYMENTS_ACQUIRER_FEE_BPS as an integer in 0..10000, or the error text naming it. */
function feeBpsOf(env: Env): number | string {
  const raw = env.PAYMENTS_ACQUIRER_FEE_BPS;
  if (raw === undefined || raw === "") return DEFAULT_FEE_BPS;
  const value = Number(raw);
  return /^\d{1,5}$/.test(raw) && value <= 10_000
    ? value
    : "PAYMENTS_ACQUIRER_FEE_BPS must be an integer in 0..10000";
}

type Env = Readonly<Record<string, string | undefined>>;

/** The date a file is for: its name's, else its rows' (all rows must share one UTC date). */
function dateOfFile(path: string, csv: string): string | undefined {
  const named = DATE_IN_NAME.exec(basename(path))?.[1];
  if (named !== undefined) return named;
  const dates = new Set(
    parseSettlementCsv(csv).map((row) => new Date(row.settledAtMs).toISOString().slice(0, 10)),
  );
  return dates.size === 1 ? [...dates][0] : undefined;
}

/** The summary as an aligned two-column table. */
export function formatSummary(summary: RunSummary): string {
  const lines: [string, string][] = [
    ["date", summary.date],
    ["file rows", String(summary.fileRows)],
    ["matched", String(summary.matched)],
    ["missing_in_ledger", String(summary.byKind.missing_in_ledger)],
    ["missing_at_acquirer", String(summary.byKind.missing_at_acquirer)],
    ["amount_mismatch", String(summary.byKind.amount_mismatch)],
    ["fee_mismatch", String(summary.byKind.fee_mismatch)],
    ["exceptions (total)", String(summary.differences)],
    ["new exceptions", String(summary.newExceptions)],
  ];
  const width = Math.max(...lines.map(([name]) => name.length));
  return lines.map(([name, value]) => `${name.padEnd(width)}  ${value}`).join("\n");
}

/** A file that cannot be read or parsed: one line for the user, exit 1 (not a usage error). */
class FileProblem extends Error {}

/** The file's text, or a FileProblem naming the path and the system's reason (no stack). */
async function readSettlementFile(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason =
      code === "ENOENT"
        ? "no such file"
        : code === "EISDIR"
          ? "is a directory"
          : code === "EACCES"
            ? "permission denied"
            : (error as Error).message;
    throw new FileProblem(`cannot read settlement file ${file}: ${reason}`);
  }
}

async function sourceOf(
  file: string | undefined,
  date: string | undefined,
  env: Env,
): Promise<{ date: string; from: SettlementSource } | string> {
  if (file !== undefined) {
    const csv = await readSettlementFile(file);
    let fileDate: string | undefined;
    try {
      // Parsed here for its rows' date, and once more by the run: a bad file stops before the database opens.
      fileDate = date ?? dateOfFile(file, csv);
      parseSettlementCsv(csv);
    } catch (error) {
      throw new FileProblem(`${file}: ${(error as Error).message}`);
    }
    if (fileDate === undefined) return "cannot tell the file's date: pass --date YYYY-MM-DD";
    return { date: fileDate, from: { csv, source: `file:${file}` } };
  }
  if (date === undefined) return "give a settlement file or --date YYYY-MM-DD";
  if (!env.ACQUIRER_URL) return "--date without a file needs ACQUIRER_URL to fetch the settlement file";
  return { date, from: { acquirerUrl: env.ACQUIRER_URL } };
}

/** The current UTC date, YYYY-MM-DD: what `--date today` means. */
function todayUtc(): string {
  return new Date(systemClock.nowMs()).toISOString().slice(0, 10);
}

/** Runs the CLI with `argv` (no node/script); returns the exit code. */
export async function runReconcileCli(
  argv: readonly string[],
  env: Env,
  print: (text: string) => void,
): Promise<number> {
  let parsed: ReturnType<
    typeof parseArgs<{
      options: { date: { type: "string" }; help: { type: "boolean" } };
      allowPositionals: true;
    }>
  >;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: { date: { type: "string" }, help: { type: "boolean" } },
      allowPositionals: true,
    });
  } catch (error) {
    print(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    print(USAGE);
    return 0;
  }
  if (parsed.positionals.length > 1) {
    print(`one settlement file at a time\n${USAGE}`);
    return 2;
  }
  const date = parsed.values.date === "today" ? todayUtc() : parsed.values.date;
  let chosen: Awaited<ReturnType<typeof sourceOf>>;
  try {
    chosen = await sourceOf(parsed.positionals[0], date, env);
  } catch (error) {
    if (!(error instanceof FileProblem)) throw error;
    print(`reconciliation failed: ${error.message}`);
    return 1;
  }
  const feeBps = feeBpsOf(env);
  if (typeof chosen === "string" || typeof feeBps === "string") {
    print(`${typeof chosen === "string" ? chosen : feeBps}\n${USAGE}`);
    return 2;
  }
  let db: Awaited<ReturnType<typeof openDatabase>>;
  try {
    db = await openDatabase({ system: "payments", env });
  } catch (error) {
    // e.g. the embedded database is held by the running service: one line, not a stack.
    print(`reconciliation failed: cannot open the database: ${(error as Error).message}`);
    return 1;
  }
  try {
    await runMigrations(db, { dir: new URL("../store/migrations/", import.meta.url) });
    const summary = await reconcileDate({ db, clock: systemClock, feeBps }, chosen.date, chosen.from);
    print(formatSummary(summary));
    return 0;
  } catch (error) {
    print(`reconciliation failed: ${(error as Error).message}`);
    return 1;
  } finally {
    await db.close();
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.exitCode = await runReconcileCli(process.argv.slice(2), process.env, (text) => console.log(text));
}

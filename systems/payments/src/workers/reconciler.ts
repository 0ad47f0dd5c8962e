/**
 * The daily reconciliation job (PY-10): for a settlement date, read the acquirer's D+1 file (fetched
 * from the acquirer or given as text), match it by (operation, acquirer key) against what our ledger
 * booked, and record every difference as an exception for operations. Corrections are never
 * automatic: `adjust` (reconciliation-repository.ts) books them one by one, as NEW ledger entries.
 *
 * Fees: each matched capture's acquirer fee (the file's `fee_minor`) is booked at the contracted
 * `feeBps` (merchant_pending → acquirer_fees), once per settlement row; a file fee that differs from
 * what the ledger holds is a `fee_mismatch` exception.
 *
 * Schedule: once a day after the acquirer publishes (the file is refused before the day is over),
 * for yesterday's UTC date; a re-run of a day adds no duplicate exceptions.
 *
 * @example
 * const summary = await reconcileDate({ db, clock: systemClock }, "2026-10-22", { acquirerUrl: "http://127.0.0.1:8105" });
 * summary.byKind.amount_mismatch; // 1
 */
import { OutboundClient, type OutboundResponse } from "@casebook/infra/http/outbound";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { feeChecks, feeDifferences, matchSettlement } from "../domain/reconciliation.ts";
import { reconciliationErrors } from "../errors.ts";
import { parseSettlementCsv, type SettlementRow, utcDay } from "../sim/settlement-file.ts";
import {
  bookedOperations,
  bookFees,
  type RunSummary,
  recordRun,
} from "../store/reconciliation-repository.ts";

/** How long one settlement-file download may take before the run gives up. */
export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
/** Bound on connecting to the acquirer, inside the download's deadline. */
const MAX_FETCH_CONNECT_MS = 5_000;
/**
 * Largest settlement file read, in bytes: a day's file is ~100 bytes a row, so this is
 * over a million rows; a bigger answer fails the run rather than filling the heap.
 */
export const MAX_SETTLEMENT_FILE_BYTES = 256 * 1024 * 1024;

export interface ReconcilerDeps {
  db: Database;
  clock: Clock;
  /** The acquirer fee our contract sets on captures, in basis points (150 = 1.5 %). */
  feeBps: number;
}

/** The file, either text already at hand or fetched from the acquirer's GET /v1/settlements/{date}.csv. */
export type SettlementSource =
  | { csv: string; source: string }
  | { acquirerUrl: string; fetchTimeoutMs?: number };

/**
 * Downloads a day's settlement file on infra's outbound client (connect, headers and body
 * each bounded, under the `timeoutMs` deadline, the file size capped);
 * PAYMENTS_RECON_FILE_UNAVAILABLE when the acquirer refuses or fails, the OUTBOUND_* error
 * (naming its phase) as cause.
 */
export async function fetchSettlementCsv(
  acquirerUrl: string,
  date: string,
  timeoutMs = DEFAULT_FETCH_TIMEOUT_MS,
): Promise<string> {
  const url = new URL(`/v1/settlements/${encodeURIComponent(date)}.csv`, acquirerUrl);
  // One client per download (a daily job): phase bounds under the whole download's deadline.
  const client = new OutboundClient({
    addressGuard: "off", // the configured acquirer, not a user's URL
    timeouts: {
      connectMs: Math.min(MAX_FETCH_CONNECT_MS, timeoutMs),
      headersMs: timeoutMs,
      bodyMs: timeoutMs,
    },
    deadlineMs: timeoutMs,
    maxResponseBytes: MAX_SETTLEMENT_FILE_BYTES,
    pool: { maxOrigins: 1, maxSocketsPerOrigin: 1, idleSocketTimeoutMs: 1_000 },
  });
  let res: OutboundResponse;
  try {
    res = await client.request({ method: "GET", url });
  } catch (cause) {
    throw reconciliationErrors.create("PAYMENTS_RECON_FILE_UNAVAILABLE", {
      fields: { url: url.href, cause: String(cause) },
      cause,
    });
  } finally {
    client.close();
  }
  const text = res.body.toString("utf8");
  if (!(res.status >= 200 && res.status < 300)) {
    throw reconciliationErrors.create("PAYMENTS_RECON_FILE_UNAVAILABLE", {
      fields: { url: url.href, status: res.status, body: text.slice(0, 500) },
    });
  }
  return text;
}

/** Reconciles one UTC date, books its fees and records the run; returns the summary (matched, differences by kind). */
export async function reconcileDate(
  deps: ReconcilerDeps,
  date: string,
  from: SettlementSource,
): Promise<RunSummary> {
  const day = utcDay(date);
  if (day === undefined)
    throw reconciliationErrors.create("PAYMENTS_RECON_DATE_INVALID", { fields: { date } });
  const startedAtMs = deps.clock.nowMs();
  const csv =
    "csv" in from ? from.csv : await fetchSettlementCsv(from.acquirerUrl, date, from.fetchTimeoutMs);
  const source = "csv" in from ? from.source : from.acquirerUrl;
  const rows: SettlementRow[] = parseSettlementCsv(csv);
  const booked = await bookedOperations(
    deps.db,
    day,
    rows.map((row) => row.idempotencyKey),
  );
  const result = matchSettlement(rows, booked, day);
  // Fees first, each once per row: a crash before the run is recorded leaves the day to re-run,
  // and the re-run finds those fees booked and books nothing new.
  const checks = feeChecks(rows, booked, deps.feeBps);
  const fees = await bookFees(deps.db, checks);
  return recordRun(deps.db, {
    date,
    source,
    fileRows: rows.length,
    matched: result.matched,
    differences: [...result.differences, ...feeDifferences(checks, fees)],
    startedAtMs,
    nowMs: deps.clock.nowMs(),
  });
}

/** The UTC date before `nowMs` (the day whose D+1 file is due), as YYYY-MM-DD. */
export function previousUtcDate(nowMs: number): string {
  return new Date(nowMs - 86_400_000).toISOString().slice(0, 10);
}

/**
 * Reconciliation in SQL (schema: migrations/006_reconciliation.sql, PY-10).
 *
 * - `bookedOperations` reads what our ledger booked for a day (posted captures, succeeded refunds)
 *   plus any operation carrying a key the file names, for `matchSettlement`.
 * - `recordRun` stores one run and its differences; a difference already recorded for that day
 *   (same kind, operation, key) is not added again, so re-running a day is safe.
 * - `adjust` corrects the ledger for one exception with a NEW posted transfer (idem key
 *   `recon:<exception id>`) and resolves the exception in the same transaction; the original
 *   entries are never touched. `resolve` closes one without touching the ledger.
 *
 * @example
 * const booked = await bookedOperations(db, day, keysInFile);
 * const run = await recordRun(db, { date, source, fileRows, result: matchSettlement(rows, booked, day), ... });
 * await adjust(db, run.exceptionIds[0], { nowMs: clock.nowMs() });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { UtcDay } from "../acquirer-sim/settlement-file.ts";
import { normalizeTransfer } from "../domain/ledger.ts";
import {
  type BookedOperation,
  correctionFor,
  type ExceptionKind,
  type MatchResult,
  type SettlementOperation,
} from "../domain/reconciliation.ts";
import { reconciliationErrors } from "../domain/reconciliation-errors.ts";
import { applyTransfers } from "./ledger-repository.ts";
import { ensureMerchantAccounts } from "./merchant-accounts.ts";

export interface ReconciliationException {
  id: bigint;
  runId: bigint;
  settlementDate: string;
  kind: ExceptionKind;
  operation: SettlementOperation;
  acquirerKey: string;
  currency: string;
  expectedMinor: bigint | null;
  actualMinor: bigint | null;
  paymentId: bigint | null;
  refundId: bigint | null;
  status: "open" | "resolved";
  resolution: string | null;
  adjustmentTransactionId: bigint | null;
  createdAt: Date;
  resolvedAt: Date | null;
}

interface ExceptionRow {
  id: bigint;
  run_id: bigint;
  settlement_date: string;
  kind: ExceptionKind;
  operation: SettlementOperation;
  acquirer_key: string;
  currency: string;
  expected_minor: bigint | null;
  actual_minor: bigint | null;
  payment_id: bigint | null;
  refund_id: bigint | null;
  status: "open" | "resolved";
  resolution: string | null;
  adjustment_transaction_id: bigint | null;
  created_at: Date;
  resolved_at: Date | null;
}

const EXCEPTION_COLUMNS = `id, run_id, settlement_date::text AS settlement_date, kind, operation, acquirer_key,
  currency, expected_minor, actual_minor, payment_id, refund_id, status, resolution, adjustment_transaction_id,
  created_at, resolved_at`;

function toException(row: ExceptionRow): ReconciliationException {
  return {
    id: row.id,
    runId: row.run_id,
    settlementDate: row.settlement_date,
    kind: row.kind,
    operation: row.operation,
    acquirerKey: row.acquirer_key,
    currency: row.currency,
    expectedMinor: row.expected_minor,
    actualMinor: row.actual_minor,
    paymentId: row.payment_id,
    refundId: row.refund_id,
    status: row.status,
    resolution: row.resolution,
    adjustmentTransactionId: row.adjustment_transaction_id,
    createdAt: row.created_at,
    resolvedAt: row.resolved_at,
  };
}

interface BookedRow {
  operation: SettlementOperation;
  acquirer_key: string;
  amount_minor: bigint;
  currency: string;
  at: Date;
  payment_id: bigint;
  refund_id: bigint | null;
}

/**
 * Our booked operations inside `day`, plus those (any day) whose key is in `fileKeys`. A capture's
 * time is when its saga finished the capture step (`finished_at`, kept by later refunds); a
 * refund's is when it succeeded (`updated_at`, last written by completeRefund).
 */
export async function bookedOperations(
  q: Queryable,
  day: UtcDay,
  fileKeys: readonly string[],
): Promise<BookedOperation[]> {
  const { rows } = await q.query<BookedRow>(
    `SELECT 'capture' AS operation, acquirer_key, captured_minor AS amount_minor, currency::text AS currency,
            COALESCE(finished_at, updated_at) AS at, id AS payment_id, NULL::int8 AS refund_id
       FROM payments
      WHERE captured_minor > 0
        AND ((COALESCE(finished_at, updated_at) >= $1 AND COALESCE(finished_at, updated_at) < $2)
             OR acquirer_key = ANY($3::text[]))
     UNION ALL
     SELECT 'refund', r.acquirer_key, r.amount_minor, p.currency::text, r.updated_at, r.payment_id, r.id
       FROM payment_refunds r JOIN payments p ON p.id = r.payment_id
      WHERE r.status = 'succeeded'
        AND ((r.updated_at >= $1 AND r.updated_at < $2) OR r.acquirer_key = ANY($3::text[]))`,
    [new Date(day.startMs), new Date(day.endMs), fileKeys],
  );
  return rows.map((row) => ({
    operation: row.operation,
    acquirerKey: row.acquirer_key,
    amountMinor: row.amount_minor,
    currency: row.currency,
    atMs: row.at.getTime(),
    paymentId: row.payment_id,
    refundId: row.refund_id,
  }));
}

export interface RunInput {
  date: string;
  source: string;
  fileRows: number;
  result: MatchResult;
  startedAtMs: number;
  nowMs: number;
}

export interface RunSummary {
  runId: bigint;
  date: string;
  fileRows: number;
  matched: number;
  differences: number;
  newExceptions: number;
  /** Differences by kind, as found by this run (new or already recorded). */
  byKind: Record<ExceptionKind, number>;
}

/** Stores the run and its differences in one transaction; already recorded differences are skipped. */
export async function recordRun(db: Database, input: RunInput): Promise<RunSummary> {
  const { differences, matched } = input.result;
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: bigint }>(
      `INSERT INTO reconciliation_runs (settlement_date, source, file_rows, matched, differences, new_exceptions,
         started_at, finished_at) VALUES ($1, $2, $3, $4, $5, 0, $6, $7) RETURNING id`,
      [
        input.date,
        input.source,
        input.fileRows,
        matched,
        differences.length,
        new Date(input.startedAtMs),
        new Date(input.nowMs),
      ],
    );
    const runId = rows[0]!.id;
    let newExceptions = 0;
    const byKind: Record<ExceptionKind, number> = {
      missing_in_ledger: 0,
      missing_at_acquirer: 0,
      amount_mismatch: 0,
    };
    for (const d of differences) {
      byKind[d.kind] += 1;
      const inserted = await tx.query(
        `INSERT INTO reconciliation_exceptions (run_id, settlement_date, kind, operation, acquirer_key, currency,
           expected_minor, actual_minor, payment_id, refund_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (settlement_date, kind, operation, acquirer_key) DO NOTHING RETURNING id`,
        [
          runId,
          input.date,
          d.kind,
          d.operation,
          d.acquirerKey,
          d.currency,
          d.expectedMinor,
          d.actualMinor,
          d.paymentId,
          d.refundId,
          new Date(input.nowMs),
        ],
      );
      newExceptions += inserted.rows.length;
    }
    await tx.query("UPDATE reconciliation_runs SET new_exceptions = $2 WHERE id = $1", [
      runId,
      newExceptions,
    ]);
    return {
      runId,
      date: input.date,
      fileRows: input.fileRows,
      matched,
      differences: differences.length,
      newExceptions,
      byKind,
    };
  });
}

/** Exceptions, oldest first; `status` and `date` narrow the list. Bounded by `limit` (max 1000). */
export async function listExceptions(
  q: Queryable,
  filter: { status?: "open" | "resolved"; date?: string; limit?: number } = {},
): Promise<ReconciliationException[]> {
  const limit = Math.min(Math.max(filter.limit ?? 100, 1), 1_000);
  const { rows } = await q.query<ExceptionRow>(
    `SELECT ${EXCEPTION_COLUMNS} FROM reconciliation_exceptions
      WHERE ($1::text IS NULL OR status = $1) AND ($2::date IS NULL OR settlement_date = $2::date)
      ORDER BY id LIMIT $3`,
    [filter.status ?? null, filter.date ?? null, limit],
  );
  return rows.map(toException);
}

async function lockException(tx: Queryable, id: bigint): Promise<ReconciliationException> {
  const { rows } = await tx.query<ExceptionRow>(
    `SELECT ${EXCEPTION_COLUMNS} FROM reconciliation_exceptions WHERE id = $1 FOR UPDATE`,
    [id],
  );
  if (rows[0] === undefined) {
    throw reconciliationErrors.create("PAYMENTS_RECON_EXCEPTION_NOT_FOUND", {
      fields: { id: id.toString() },
    });
  }
  return toException(rows[0]);
}

/** The merchant an exception's key belongs to: its payment, or the payment or refund carrying the key. */
async function merchantOf(tx: Queryable, e: ReconciliationException): Promise<string> {
  const { rows } = await tx.query<{ merchant_id: string }>(
    `SELECT merchant_id FROM payments WHERE id = $1 OR ($2 = 'capture' AND acquirer_key = $3)
     UNION ALL
     SELECT merchant_id FROM payment_refunds WHERE $2 = 'refund' AND acquirer_key = $3
     LIMIT 1`,
    [e.paymentId, e.operation, e.acquirerKey],
  );
  if (rows[0] === undefined) {
    throw reconciliationErrors.create("PAYMENTS_RECON_UNKNOWN_KEY", {
      fields: { id: e.id.toString(), acquirerKey: e.acquirerKey },
    });
  }
  return rows[0].merchant_id;
}

/**
 * Corrects the ledger for one exception so it says what the acquirer settled: a NEW posted
 * transfer `recon:<id>` between the merchant's customer_funds and merchant_pending (direction by
 * `correctionFor`), and the exception resolved, in one transaction. Never automatic: operations
 * call it after looking. Idempotent: a resolved exception is returned unchanged.
 */
export async function adjust(
  db: Database,
  id: bigint,
  options: { nowMs: number; note?: string },
): Promise<ReconciliationException> {
  return db.transaction(async (tx) => {
    const e = await lockException(tx, id);
    if (e.status === "resolved") return e;
    const correction = correctionFor(e.operation, e.expectedMinor, e.actualMinor);
    let transactionId: bigint | null = null;
    if (correction !== undefined) {
      const accounts = await ensureMerchantAccounts(tx, await merchantOf(tx, e), e.currency);
      const transfer = normalizeTransfer({
        idemKey: `recon:${e.id}`,
        from: accounts[correction.from],
        to: accounts[correction.to],
        amount: correction.amountMinor,
        currency: e.currency,
        metadata: { reconciliationExceptionId: e.id.toString(), kind: e.kind, acquirerKey: e.acquirerKey },
      });
      const [result] = await applyTransfers(tx, [{ transfer, reversesId: null }]);
      transactionId = result!.transaction.id;
    }
    return markResolved(tx, e.id, options.note ?? `adjusted: ${e.kind}`, transactionId, options.nowMs);
  });
}

/** Closes an exception without a ledger entry (e.g. the acquirer corrected its file). Idempotent. */
export async function resolve(
  db: Database,
  id: bigint,
  options: { nowMs: number; note: string },
): Promise<ReconciliationException> {
  return db.transaction(async (tx) => {
    const e = await lockException(tx, id);
    if (e.status === "resolved") return e;
    return markResolved(tx, e.id, options.note, null, options.nowMs);
  });
}

async function markResolved(
  tx: Queryable,
  id: bigint,
  note: string,
  transactionId: bigint | null,
  nowMs: number,
): Promise<ReconciliationException> {
  const { rows } = await tx.query<ExceptionRow>(
    `UPDATE reconciliation_exceptions SET status = 'resolved', resolution = $2, adjustment_transaction_id = $3,
        resolved_at = $4 WHERE id = $1 RETURNING ${EXCEPTION_COLUMNS}`,
    [id, note, transactionId, new Date(nowMs)],
  );
  return toException(rows[0]!);
}

/**
 * Reconciliation in SQL (schema: migrations/006_reconciliation.sql, PY-10).
 *
 * - `bookedOperations` reads what our ledger booked for a day (posted captures, succeeded refunds)
 *   plus any operation carrying a key the file names, for `matchSettlement`.
 * - `recordRun` stores one run and its differences; a difference already recorded for that day
 *   (same kind, operation, key) is not added again, so re-running a day is safe.
 * - `bookFees` books, once per settlement row, the contracted acquirer fee of each matched capture
 *   (merchant_pending → the platform's acquirer_fees account, idem key `fee:<acquirer key>`).
 * - `adjust` corrects the ledger for one exception with a NEW posted transfer (idem key
 *   `recon:<exception id>`) and resolves the exception in the same transaction; the original
 *   entries are never touched. `resolve` closes one without touching the ledger.
 * - `listMerchantExceptions`, `findMerchantException`, `resolveMerchantException`: the same, scoped
 *   to the merchant the exception belongs to, for the exceptions API (another merchant's is absent).
 *
 * @example
 * const booked = await bookedOperations(db, day, keysInFile);
 * const run = await recordRun(db, { date, source, fileRows, result: matchSettlement(rows, booked, day), ... });
 * await adjust(db, run.exceptionIds[0], { nowMs: clock.nowMs() });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { normalizeTransfer } from "../domain/ledger.ts";
import {
  type BookedOperation,
  type Correction,
  type CorrectionAccount,
  correctionFor,
  type Difference,
  EXCEPTION_KINDS,
  type ExceptionKind,
  type FeeCheck,
  feeCorrectionFor,
  type SettlementOperation,
} from "../domain/reconciliation.ts";
import { ledgerErrors, reconciliationErrors } from "../errors.ts";
import type { UtcDay } from "../sim/settlement-file.ts";
import { applyTransfers } from "./ledger-repository.ts";
import { ensureMerchantAccounts } from "./merchant-accounts.ts";

export type ResolutionAction = "adjust" | "dismiss";

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
  /** Internal ids (public-ids.ts): the API shows paymentPublicId and refundPublicId. */
  paymentId: bigint | null;
  refundId: bigint | null;
  paymentPublicId: string | null;
  refundPublicId: string | null;
  /** Whose payment or refund it is; null for a key none of ours carries (operations only). */
  merchantId: string | null;
  status: "open" | "resolved";
  resolutionAction: ResolutionAction | null;
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
  payment_public_id: string | null;
  refund_public_id: string | null;
  merchant_id: string | null;
  status: "open" | "resolved";
  resolution_action: ResolutionAction | null;
  resolution: string | null;
  adjustment_transaction_id: bigint | null;
  created_at: Date;
  resolved_at: Date | null;
}

/** An exception's columns, with the public ids of its payment and refund (the API shows no internal id). */
const EXCEPTION_COLUMNS = `id, run_id, settlement_date::text AS settlement_date, kind, operation, acquirer_key,
  currency, expected_minor, actual_minor, payment_id, refund_id,
  (SELECT p.public_id FROM payments p WHERE p.id = reconciliation_exceptions.payment_id) AS payment_public_id,
  (SELECT r.public_id FROM payment_refunds r WHERE r.id = reconciliation_exceptions.refund_id) AS refund_public_id,
  merchant_id, status, resolution_action, resolution, adjustment_transaction_id, created_at, resolved_at`;

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
    paymentPublicId: row.payment_public_id,
    refundPublicId: row.refund_public_id,
    merchantId: row.merchant_id,
    status: row.status,
    resolutionAction: row.resolution_action,
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
  /** File rows equal to a booked operation (amount and currency; fees are checked apart). */
  matched: number;
  /** Every difference found, fee mismatches included. */
  differences: readonly Difference[];
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
  const { differences, matched } = input;
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
    const byKind = Object.fromEntries(EXCEPTION_KINDS.map((kind) => [kind, 0])) as Record<
      ExceptionKind,
      number
    >;
    for (const d of differences) {
      byKind[d.kind] += 1;
      // The owner: the booked payment/refund, else whichever of ours carries the key (none: operations only).
      const inserted = await tx.query(
        `INSERT INTO reconciliation_exceptions (run_id, settlement_date, kind, operation, acquirer_key, currency,
           expected_minor, actual_minor, payment_id, refund_id, created_at, merchant_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, COALESCE(
           (SELECT merchant_id FROM payments WHERE id = $9),
           (SELECT merchant_id FROM payment_refunds WHERE id = $10),
           (SELECT merchant_id FROM payments WHERE $4 = 'capture' AND acquirer_key = $5),
           (SELECT merchant_id FROM payment_refunds WHERE $4 = 'refund' AND acquirer_key = $5)))
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
  const limit = Math.min(Math.max(filter.limit ?? 100, 1), MAX_EXCEPTIONS_PAGE);
  const { rows } = await q.query<ExceptionRow>(
    `SELECT ${EXCEPTION_COLUMNS} FROM reconciliation_exceptions
      WHERE ($1::text IS NULL OR status = $1) AND ($2::date IS NULL OR settlement_date = $2::date)
      ORDER BY id LIMIT $3`,
    [filter.status ?? null, filter.date ?? null, limit],
  );
  return rows.map(toException);
}

/** Largest page any exception listing returns. */
export const MAX_EXCEPTIONS_PAGE = 1_000;

export interface MerchantExceptionFilter {
  status?: "open" | "resolved";
  kind?: ExceptionKind;
  /** Settlement dates, inclusive, YYYY-MM-DD. */
  from?: string;
  to?: string;
  /** Keyset: only exceptions with a larger id (the previous page's last). */
  afterId?: bigint;
  /** 1..MAX_EXCEPTIONS_PAGE. */
  limit: number;
}

/** A merchant's exceptions, oldest first (a work queue), keyset-paginated by id. */
export async function listMerchantExceptions(
  q: Queryable,
  merchantId: string,
  filter: MerchantExceptionFilter,
): Promise<ReconciliationException[]> {
  if (!Number.isInteger(filter.limit) || filter.limit < 1 || filter.limit > MAX_EXCEPTIONS_PAGE) {
    throw new RangeError(`limit must be an integer in 1..${MAX_EXCEPTIONS_PAGE}`);
  }
  const { rows } = await q.query<ExceptionRow>(
    `SELECT ${EXCEPTION_COLUMNS} FROM reconciliation_exceptions
      WHERE merchant_id = $1 AND id > $2
        AND ($3::text IS NULL OR status = $3) AND ($4::text IS NULL OR kind = $4)
        AND ($5::date IS NULL OR settlement_date >= $5::date) AND ($6::date IS NULL OR settlement_date <= $6::date)
      ORDER BY id LIMIT $7`,
    [
      merchantId,
      filter.afterId ?? 0n,
      filter.status ?? null,
      filter.kind ?? null,
      filter.from ?? null,
      filter.to ?? null,
      filter.limit,
    ],
  );
  return rows.map(toException);
}

/** One exception if it is the merchant's: another merchant's id reads as absent. */
export async function findMerchantException(
  q: Queryable,
  merchantId: string,
  id: bigint,
): Promise<ReconciliationException | undefined> {
  const { rows } = await q.query<ExceptionRow>(
    `SELECT ${EXCEPTION_COLUMNS} FROM reconciliation_exceptions WHERE id = $1 AND merchant_id = $2`,
    [id, merchantId],
  );
  return rows[0] === undefined ? undefined : toException(rows[0]);
}

/** The exception locked FOR UPDATE; with `merchantId`, only if it is that merchant's. */
async function lockException(
  tx: Queryable,
  id: bigint,
  merchantId?: string,
): Promise<ReconciliationException> {
  const { rows } = await tx.query<ExceptionRow>(
    `SELECT ${EXCEPTION_COLUMNS} FROM reconciliation_exceptions
      WHERE id = $1 AND ($2::text IS NULL OR merchant_id = $2) FOR UPDATE`,
    [id, merchantId ?? null],
  );
  if (rows[0] === undefined) {
    throw reconciliationErrors.create("PAYMENTS_RECON_EXCEPTION_NOT_FOUND", {
      fields: { id: id.toString() },
    });
  }
  return toException(rows[0]);
}

/** The merchant an exception's key belongs to: recorded with it, else looked up (exceptions older than 008). */
async function merchantOf(tx: Queryable, e: ReconciliationException): Promise<string> {
  if (e.merchantId !== null) return e.merchantId;
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

/** First key of the two-int advisory lock provisioning platform accounts (merchant accounts use 5 001). */
const PLATFORM_LOCK_SPACE = 5_002;

/**
 * The platform's acquirer_fees account in `currency`, created on first use inside `tx` (an advisory
 * lock per currency, then a second read: two first uses racing create ONE account).
 */
export async function ensureFeeAccount(tx: Queryable, currency: string): Promise<bigint> {
  const read = () =>
    tx.query<{ account_id: bigint }>(
      "SELECT account_id FROM platform_accounts WHERE currency = $1 AND role = 'acquirer_fees'",
      [currency],
    );
  const found = (await read()).rows[0];
  if (found !== undefined) return found.account_id;
  await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [PLATFORM_LOCK_SPACE, `fees:${currency}`]);
  const raced = (await read()).rows[0];
  if (raced !== undefined) return raced.account_id;
  const { rows } = await tx.query<{ id: bigint }>(
    `WITH a AS (INSERT INTO accounts (currency, no_overdraft, metadata) VALUES ($1, false, $2::jsonb) RETURNING id),
          b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, false FROM a),
          p AS (INSERT INTO platform_accounts (currency, role, account_id) SELECT $1, 'acquirer_fees', id FROM a)
     SELECT id FROM a`,
    [currency, JSON.stringify({ role: "acquirer_fees" })],
  );
  return rows[0]!.id;
}

/** The ledger account of each side of a correction, for the exception's merchant and currency. */
async function correctionAccounts(
  tx: Queryable,
  e: ReconciliationException,
  correction: Correction,
): Promise<{ from: bigint; to: bigint }> {
  const merchant = await ensureMerchantAccounts(tx, await merchantOf(tx, e), e.currency);
  const fees = correction.from === "acquirer_fees" || correction.to === "acquirer_fees";
  const feeAccount = fees ? await ensureFeeAccount(tx, e.currency) : 0n;
  const idOf = (account: CorrectionAccount) => (account === "acquirer_fees" ? feeAccount : merchant[account]);
  return { from: idOf(correction.from), to: idOf(correction.to) };
}

/** Books the correction of one locked, open exception and resolves it as `adjust`. */
async function adjustLocked(
  tx: Queryable,
  e: ReconciliationException,
  options: { nowMs: number; note?: string },
): Promise<ReconciliationException> {
  const correction =
    e.kind === "fee_mismatch"
      ? feeCorrectionFor(e.expectedMinor, e.actualMinor)
      : correctionFor(e.operation, e.expectedMinor, e.actualMinor);
  let transactionId: bigint | null = null;
  if (correction !== undefined) {
    const accounts = await correctionAccounts(tx, e, correction);
    const transfer = normalizeTransfer({
      idemKey: `recon:${e.id}`,
      from: accounts.from,
      to: accounts.to,
      amount: correction.amountMinor,
      currency: e.currency,
      metadata: { reconciliationExceptionId: e.id.toString(), kind: e.kind, acquirerKey: e.acquirerKey },
    });
    const [result] = await applyTransfers(tx, [{ transfer, reversesId: null }]);
    transactionId = result!.transaction.id;
  }
  return markResolved(tx, e.id, {
    action: "adjust",
    note: options.note ?? `adjusted: ${e.kind}`,
    transactionId,
    nowMs: options.nowMs,
  });
}

/**
 * Corrects the ledger for one exception so it says what the acquirer settled: a NEW posted
 * transfer `recon:<id>` (direction by `correctionFor`, or `feeCorrectionFor` for a fee), and the
 * exception resolved, in one transaction. Never automatic: operations call it after looking.
 * Idempotent: a resolved exception is returned unchanged.
 */
export async function adjust(
  db: Database,
  id: bigint,
  options: { nowMs: number; note?: string },
): Promise<ReconciliationException> {
  return db.transaction(async (tx) => {
    const e = await lockException(tx, id);
    return e.status === "resolved" ? e : adjustLocked(tx, e, options);
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
    return markResolved(tx, e.id, {
      action: "dismiss",
      note: options.note,
      transactionId: null,
      nowMs: options.nowMs,
    });
  });
}

/**
 * The exceptions API's resolve, scoped to `merchantId` (another merchant's id: NOT_FOUND):
 * `adjust` books the correction, `dismiss` closes it untouched. A repeat of the action that
 * resolved it returns the stored result (`repeated: true`, the first note kept); the other action
 * on a resolved exception is PAYMENTS_RECON_EXCEPTION_RESOLVED (409).
 */
export async function resolveMerchantException(
  db: Database,
  merchantId: string,
  id: bigint,
  request: { action: ResolutionAction; note?: string; nowMs: number },
): Promise<{ exception: ReconciliationException; repeated: boolean }> {
  return db.transaction(async (tx) => {
    const e = await lockException(tx, id, merchantId);
    if (e.status === "resolved") {
      if (e.resolutionAction === request.action) return { exception: e, repeated: true };
      throw reconciliationErrors.create("PAYMENTS_RECON_EXCEPTION_RESOLVED", {
        fields: { id: id.toString(), resolutionAction: e.resolutionAction, action: request.action },
      });
    }
    const exception =
      request.action === "adjust"
        ? await adjustLocked(tx, e, { nowMs: request.nowMs, note: request.note })
        : await markResolved(tx, e.id, {
            action: "dismiss",
            note: request.note ?? "dismissed",
            transactionId: null,
            nowMs: request.nowMs,
          });
    return { exception, repeated: false };
  });
}

async function markResolved(
  tx: Queryable,
  id: bigint,
  resolution: { action: ResolutionAction; note: string; transactionId: bigint | null; nowMs: number },
): Promise<ReconciliationException> {
  const { rows } = await tx.query<ExceptionRow>(
    `UPDATE reconciliation_exceptions SET status = 'resolved', resolution_action = $2, resolution = $3,
        adjustment_transaction_id = $4, resolved_at = $5 WHERE id = $1 RETURNING ${EXCEPTION_COLUMNS}`,
    [id, resolution.action, resolution.note, resolution.transactionId, new Date(resolution.nowMs)],
  );
  return toException(rows[0]!);
}

/** The fee transfer of a capture: one per settlement row, whatever run books it. */
export function feeIdemKey(acquirerKey: string): string {
  return `fee:${acquirerKey}`;
}

/** Fees already booked for these captures' keys, by acquirer key (the debited amount). */
async function bookedFeeAmounts(q: Queryable, keys: readonly string[]): Promise<Map<string, bigint>> {
  const { rows } = await q.query<{ idem_key: string; amount: bigint }>(
    `SELECT t.idem_key, sum(e.amount)::int8 AS amount FROM transactions t JOIN entries e ON e.transaction_id = t.id
      WHERE t.idem_key = ANY($1::text[]) AND e.direction = 'D' GROUP BY t.idem_key`,
    [keys.map(feeIdemKey)],
  );
  return new Map(rows.map((row) => [row.idem_key.slice("fee:".length), row.amount]));
}

/** Keys whose fee already has an exception: its resolution owns that fee, never an automatic booking. */
async function keysWithFeeException(q: Queryable, keys: readonly string[]): Promise<Set<string>> {
  const { rows } = await q.query<{ acquirer_key: string }>(
    `SELECT DISTINCT acquirer_key FROM reconciliation_exceptions
      WHERE kind = 'fee_mismatch' AND operation = 'capture' AND acquirer_key = ANY($1::text[])`,
    [keys],
  );
  return new Set(rows.map((row) => row.acquirer_key));
}

/** Books one contracted fee in its own transaction; null when the merchant cannot cover it (PY-14). */
async function bookFee(db: Database, check: FeeCheck, merchantId: string): Promise<bigint | null> {
  try {
    await db.transaction(async (tx) => {
      const merchant = await ensureMerchantAccounts(tx, merchantId, check.currency);
      const fees = await ensureFeeAccount(tx, check.currency);
      const transfer = normalizeTransfer({
        idemKey: feeIdemKey(check.acquirerKey),
        from: merchant.merchant_pending,
        to: fees,
        amount: check.contractedFeeMinor,
        currency: check.currency,
        metadata: { paymentId: check.paymentId.toString(), acquirerKey: check.acquirerKey },
      });
      await applyTransfers(tx, [{ transfer, reversesId: null }]);
    });
    return check.contractedFeeMinor;
  } catch (error) {
    if (ledgerErrors.is(error, "LEDGER_INSUFFICIENT_FUNDS")) return null;
    throw error;
  }
}

/**
 * Books the contracted fee of each matched capture (PY-10), exactly once per settlement row: a key
 * whose fee transfer exists is not booked again (re-running a file books nothing new), nor is one
 * whose fee already has an exception. One transaction per fee, so a merchant who cannot cover its
 * fee (everything refunded) leaves that fee unbooked — a fee_mismatch with nothing expected — and
 * never blocks the rest of the day. Returns, per key, the fee our ledger now holds (null: none).
 */
export async function bookFees(
  db: Database,
  checks: readonly FeeCheck[],
): Promise<Map<string, bigint | null>> {
  const keys = checks.map((check) => check.acquirerKey);
  const held = new Map<string, bigint | null>(await bookedFeeAmounts(db, keys));
  const owned = await keysWithFeeException(db, keys);
  const { rows } = await db.query<{ id: bigint; merchant_id: string }>(
    "SELECT id, merchant_id FROM payments WHERE id = ANY($1::int8[])",
    [checks.map((check) => check.paymentId.toString())],
  );
  const merchantOfPayment = new Map(rows.map((row) => [row.id, row.merchant_id]));
  for (const check of checks) {
    if (held.has(check.acquirerKey)) continue;
    if (owned.has(check.acquirerKey) || check.contractedFeeMinor === 0n) {
      held.set(check.acquirerKey, check.contractedFeeMinor === 0n ? 0n : null);
      continue;
    }
    const merchantId = merchantOfPayment.get(check.paymentId);
    if (merchantId === undefined)
      throw new Error(`fee of ${check.acquirerKey}: payment ${check.paymentId} is gone`);
    held.set(check.acquirerKey, await bookFee(db, check, merchantId));
  }
  return held;
}

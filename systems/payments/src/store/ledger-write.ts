/**
 * The ledger's write path, shared by the repository (single transfers, batches, reversals), the
 * group commit (ledger-group-write.ts) and the sagas' own transactions: `applyTransfers` runs
 * transfers through ONE call of the server-side `ledger_write` (007_ledger_write.sql) — lock
 * the balance rows in ascending account id, insert the transactions (multi-row, `ON CONFLICT
 * (idem_key) DO NOTHING`), insert their entries (multi-row), update each balance row once with
 * the aggregated deltas through PY-14's conditional UPDATE — and `loadTransactions` reads
 * transactions back with their entries. The module comment of ledger-repository.ts explains
 * why each step keeps the ledger correct.
 *
 * @example
 * const [result] = await applyTransfers(tx, [{ transfer: normalizeTransfer(request), reversesId: null }]);
 * const [again] = await loadTransactions(tx, [result!.transaction.id]);
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { Entry, Metadata, Transfer } from "../domain/ledger.ts";
import { ledgerErrors } from "../errors.ts";

export type TransactionStatus = "pending" | "posted" | "voided";

export interface LedgerAccount {
  id: bigint;
  currency: string;
  noOverdraft: boolean;
  metadata: Metadata;
  createdAt: Date;
}

export interface LedgerEntry extends Entry {
  id: bigint;
  transactionId: bigint;
}

export interface LedgerTransaction {
  id: bigint;
  idemKey: string;
  status: TransactionStatus;
  /** The transaction this one reverses (PY-15), or null. */
  reversesId: bigint | null;
  metadata: Metadata;
  createdAt: Date;
  /** A pending transfer's timeout (seconds) and the deadline it gave, by the database's clock; else null. */
  timeoutS: number | null;
  expiresAt: Date | null;
  entries: LedgerEntry[];
}

export interface TransferResult {
  transaction: LedgerTransaction;
  /** True when the idem_key already existed with the same parameters: nothing new was written. */
  replayed: boolean;
}

/** A transfer about to be written: normalized, plus what only reversals carry. */
export interface Pending {
  transfer: Transfer;
  reversesId: bigint | null;
}

export interface TransactionRow {
  id: bigint;
  idem_key: string;
  status: TransactionStatus;
  reverses_id: bigint | null;
  metadata: Metadata;
  created_at: Date;
  timeout_s?: number | null;
  expires_at?: Date | null;
}

export interface EntryRow {
  id: bigint;
  transaction_id: bigint;
  account_id: bigint;
  currency: string;
  direction: "D" | "C";
  amount: bigint;
}

export const TRANSACTION_COLUMNS =
  "id, idem_key, status, reverses_id, metadata, created_at, timeout_s, expires_at";
export const ENTRY_COLUMNS = "id, transaction_id, account_id, currency, direction, amount";

export function toEntry(row: EntryRow): LedgerEntry {
  return {
    id: row.id,
    transactionId: row.transaction_id,
    accountId: row.account_id,
    currency: row.currency,
    direction: row.direction,
    amount: row.amount,
  };
}

export function toTransaction(row: TransactionRow, entries: LedgerEntry[]): LedgerTransaction {
  return {
    id: row.id,
    idemKey: row.idem_key,
    status: row.status,
    reversesId: row.reverses_id,
    metadata: row.metadata,
    createdAt: row.created_at,
    timeoutS: row.timeout_s ?? null,
    expiresAt: row.expires_at ?? null,
    entries,
  };
}

/** Loads transactions with their entries, in the order of `ids`. */
export async function loadTransactions(tx: Queryable, ids: readonly bigint[]): Promise<LedgerTransaction[]> {
  if (ids.length === 0) return [];
  const idText = ids.map(String);
  const [txns, entries] = [
    await tx.query<TransactionRow>(
      `SELECT ${TRANSACTION_COLUMNS} FROM transactions WHERE id = ANY($1::int8[])`,
      [idText],
    ),
    await tx.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM entries WHERE transaction_id = ANY($1::int8[]) ORDER BY id`,
      [idText],
    ),
  ];
  const byTransaction = new Map<bigint, LedgerEntry[]>();
  for (const row of entries.rows) {
    const list = byTransaction.get(row.transaction_id) ?? [];
    list.push(toEntry(row));
    byTransaction.set(row.transaction_id, list);
  }
  const rows = new Map(txns.rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    const row = rows.get(id);
    if (!row) throw ledgerErrors.create("LEDGER_TRANSACTION_NOT_FOUND", { fields: { id: id.toString() } });
    return toTransaction(row, byTransaction.get(id) ?? []);
  });
}

function checkUniqueKeys(batch: readonly Pending[]): void {
  const seen = new Set<string>();
  for (const { transfer } of batch) {
    if (seen.has(transfer.idemKey)) {
      const fields = { reason: "an idempotency key appears twice in the batch", idemKey: transfer.idemKey };
      throw ledgerErrors.create("LEDGER_BATCH_INVALID", { fields });
    }
    seen.add(transfer.idemKey);
  }
}

export function bigintAsString(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

interface WrittenRow {
  ord: number;
  replayed: boolean;
  transaction_id: bigint;
  status: TransactionStatus;
  reverses_id: bigint | null;
  metadata: Metadata;
  created_at: Date;
  entry_id: bigint;
  account_id: bigint;
  currency: string;
  direction: "D" | "C";
  amount: bigint;
}

/** `ledger_write`'s own SQLSTATEs (007_ledger_write.sql) → typed errors; anything else passes through. */
function ledgerWriteError(err: unknown): unknown {
  const { code, detail } = (err ?? {}) as { code?: unknown; detail?: unknown };
  const text = typeof detail === "string" ? detail : "";
  switch (code) {
    case "LDA01":
      return ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", { fields: { accountId: text }, cause: err });
    case "LDA02":
      return ledgerErrors.create("LEDGER_CURRENCY_MISMATCH", { fields: JSON.parse(text), cause: err });
    case "LDI01":
      return ledgerErrors.create("LEDGER_IDEMPOTENCY_CONFLICT", { fields: JSON.parse(text), cause: err });
    case "LDF01":
      return ledgerErrors.create("LEDGER_INSUFFICIENT_FUNDS", {
        fields: { accountIds: text.split(",") },
        cause: err,
      });
    default:
      return err;
  }
}

const LEDGER_WRITE = `SELECT ord, replayed, transaction_id, status, reverses_id, metadata, created_at,
        entry_id, account_id, currency, direction, amount
   FROM ledger_write($1::text[], $2::text[], $3::boolean[], $4::int8[], $5::jsonb[],
                     $6::int4[], $7::int8[], $8::text[], $9::text[], $10::int8[])`;

function writeParams(batch: readonly Pending[]): unknown[] {
  const entries = batch.flatMap((p, i) => p.transfer.entries.map((entry) => ({ ord: i + 1, entry })));
  return [
    batch.map((p) => p.transfer.idemKey),
    batch.map((p) => p.transfer.fingerprint),
    batch.map((p) => p.transfer.pending),
    batch.map((p) => (p.reversesId === null ? null : p.reversesId.toString())),
    batch.map((p) => JSON.stringify(p.transfer.metadata, bigintAsString)),
    entries.map((e) => e.ord),
    entries.map((e) => e.entry.accountId.toString()),
    entries.map((e) => e.entry.currency),
    entries.map((e) => e.entry.direction),
    entries.map((e) => e.entry.amount.toString()),
  ];
}

/**
 * Writes `batch` (steps 1–4 of the module comment, in ONE call of the server-side
 * `ledger_write`) on `on`: inside a caller's transaction, so a saga can reserve funds and
 * record its own step atomically, or on the database itself, where the call is its own
 * autocommit transaction — one round trip. Results follow `batch`'s order.
 */
export async function applyTransfers(on: Queryable, batch: readonly Pending[]): Promise<TransferResult[]> {
  checkUniqueKeys(batch);
  let rows: WrittenRow[];
  try {
    ({ rows } = await on.query<WrittenRow>(LEDGER_WRITE, writeParams(batch), { name: "ledger_write" }));
  } catch (err) {
    throw ledgerWriteError(err);
  }
  const results: TransferResult[] = [];
  for (const row of rows) {
    let result = results[row.ord - 1];
    if (!result) {
      const transaction = toTransaction(
        {
          id: row.transaction_id,
          idem_key: batch[row.ord - 1]!.transfer.idemKey,
          status: row.status,
          reverses_id: row.reverses_id,
          metadata: row.metadata,
          created_at: row.created_at,
        },
        [],
      );
      result = { transaction, replayed: row.replayed };
      results[row.ord - 1] = result;
    }
    result.transaction.entries.push(
      toEntry({ ...row, id: row.entry_id, transaction_id: row.transaction_id }),
    );
  }
  // Every transfer has ≥ 2 entries, so each ordinal came back; a hole would be a bug in the function.
  if (results.length !== batch.length || results.includes(undefined as never))
    throw new Error(`ledger_write answered ${results.length} of ${batch.length} transfers`);
  if (batch.some((p) => p.transfer.pending)) await applyDeadlines(on, batch, results);
  return results;
}

/**
 * Pending transfers' deadlines (016): the ones just created with a timeout get theirs, set by
 * the database's clock in the same database transaction (`on` must be one when any transfer has a
 * timeout, or the row could commit without it); replayed pending ones read back what they have.
 */
async function applyDeadlines(on: Queryable, batch: readonly Pending[], results: TransferResult[]) {
  const ids: string[] = [];
  const timeouts: (number | null)[] = [];
  for (let i = 0; i < batch.length; i++) {
    const { transfer } = batch[i]!;
    const result = results[i]!;
    if (!transfer.pending || (!result.replayed && transfer.timeoutS === null)) continue;
    ids.push(result.transaction.id.toString());
    timeouts.push(result.replayed ? null : transfer.timeoutS);
  }
  if (ids.length === 0) return;
  const { rows } = await on.query<{ id: bigint; timeout_s: number | null; expires_at: Date | null }>(
    `WITH u AS (SELECT * FROM unnest($1::int8[], $2::int4[]) u(id, s)),
          set AS (UPDATE transactions t SET timeout_s = u.s, expires_at = now() + make_interval(secs => u.s)
                    FROM u WHERE t.id = u.id AND u.s IS NOT NULL
                  RETURNING t.id, t.timeout_s, t.expires_at)
     SELECT id, timeout_s, expires_at FROM set
     UNION ALL
     SELECT t.id, t.timeout_s, t.expires_at FROM transactions t JOIN u ON u.id = t.id WHERE u.s IS NULL`,
    [ids, timeouts],
    { name: "ledger_deadlines" },
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  for (const result of results) {
    const row = byId.get(result.transaction.id);
    if (row === undefined) continue;
    result.transaction.timeoutS = row.timeout_s;
    result.transaction.expiresAt = row.expires_at;
  }
}

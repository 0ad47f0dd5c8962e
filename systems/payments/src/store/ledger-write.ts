/**
 * The ledger's write path, shared by the repository (single transfers, batches, reversals), the
 * group commit (ledger-group-write.ts) and the sagas' own transactions: `applyTransfers` runs
 * transfers through ONE call of the server-side `ledger_write` (007_ledger_write.sql) — lock
 * the balance rows in ascending account id, insert the transactions (multi-row, `ON CONFLICT
 * (idem_key) DO NOTHING`), insert their entries (multi-row), update each balance row once with
 * the aggregated deltas through PY-14's conditional UPDATE — and `loadTransactions` reads
 * transactions back with their entries. Since 018 the call answers ids only (one row per transfer)
 * and the transaction is built from what was sent; `serial` checks no-overdraft accounts after
 * each transfer in batch order instead of after all of them. The module comment of
 * ledger-repository.ts explains why each step keeps the ledger correct.
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

/** One row of ledger_write's answer (018): a transfer, created or replayed. */
interface WrittenRow {
  ord: number;
  transaction_id: bigint;
  replayed: boolean;
  /** The database transaction's timestamp: on the first created row only (all created rows share it). */
  created_at: Date | null;
  /** A created transfer's entry ids, ascending (its entries in request order), comma-separated. */
  entry_ids: string | null;
}

/** `ledger_write`'s own SQLSTATEs (007, kept by 018; LDF01 also `ledger_settle`'s, 020) → typed errors; anything else passes through. */
export function ledgerWriteError(err: unknown): unknown {
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

const LEDGER_WRITE = `SELECT ord, transaction_id, replayed, created_at, entry_ids
   FROM ledger_write($1::text[], $2::text[], $3::boolean[], $4::int8[], $5::jsonb[],
                     $6::int4[], $7::int8[], $8::text[], $9::text[], $10::int8[], $11::boolean)`;

/** Metadata as sent: `{}` without a stringify for the common empty case. */
function metadataText(metadata: Metadata): string {
  for (const _key in metadata) return JSON.stringify(metadata, bigintAsString);
  return "{}";
}

/**
 * ledger_write's eleven parameters: its ten parallel arrays (007's comment), built in one pass,
 * and `p_serial` (018); and each transfer's metadata text.
 */
function writeParams(batch: readonly Pending[], serial: boolean): { params: unknown[]; metadata: string[] } {
  const keys: string[] = [];
  const fingerprints: string[] = [];
  const pending: boolean[] = [];
  const reverses: (string | null)[] = [];
  const metadata: string[] = [];
  const entryTransfer: number[] = [];
  const entryAccount: string[] = [];
  const entryCurrency: string[] = [];
  const entryDirection: string[] = [];
  const entryAmount: string[] = [];
  for (let i = 0; i < batch.length; i++) {
    const { transfer, reversesId } = batch[i]!;
    keys.push(transfer.idemKey);
    fingerprints.push(transfer.fingerprint);
    pending.push(transfer.pending);
    reverses.push(reversesId === null ? null : reversesId.toString());
    metadata.push(metadataText(transfer.metadata));
    for (const entry of transfer.entries) {
      entryTransfer.push(i + 1);
      entryAccount.push(entry.accountId.toString());
      entryCurrency.push(entry.currency);
      entryDirection.push(entry.direction);
      entryAmount.push(entry.amount.toString());
    }
  }
  const params = [
    keys,
    fingerprints,
    pending,
    reverses,
    metadata,
    entryTransfer,
    entryAccount,
    entryCurrency,
    entryDirection,
    entryAmount,
    serial,
  ];
  return { params, metadata };
}

/** A transaction ledger_write just created, from what was sent and the ids it answered. */
function createdTransaction(
  pending: Pending,
  row: WrittenRow,
  createdAt: Date,
  metadata: string,
): LedgerTransaction {
  const { transfer } = pending;
  const ids = row.entry_ids!.split(",");
  // Every entry has its id, or the function wrote something else than it was sent.
  if (ids.length !== transfer.entries.length)
    throw new Error(`ledger_write answered ${ids.length} entry ids for ${transfer.entries.length} entries`);
  return {
    id: row.transaction_id,
    idemKey: transfer.idemKey,
    status: transfer.pending ? "pending" : "posted",
    reversesId: pending.reversesId,
    // As the jsonb column gives it back (bigints as strings): parsed from what was sent.
    metadata: metadata === "{}" ? {} : (JSON.parse(metadata) as Metadata),
    createdAt: new Date(createdAt.getTime()),
    timeoutS: null,
    expiresAt: null,
    entries: transfer.entries.map((entry, k) => ({
      id: BigInt(ids[k]!),
      transactionId: row.transaction_id,
      accountId: entry.accountId,
      currency: entry.currency,
      direction: entry.direction,
      amount: entry.amount,
    })),
  };
}

/**
 * New transfers' `ledger_write` call (one atomic batch) as a statement to compose (a CTE: `WITH hold
 * AS (…)`), for a caller that writes the transfers and its own rows in ONE statement — the saga's
 * reserves and their payment rows, so the merchant's balance rows the call locks are held for that
 * one answer and the COMMIT. Its rows are `ledger_write`'s (`ord`, the transfer's place in `batch`
 * from 1, and `transaction_id` among them); parameters `$1..$11`, the caller's from `$12`. Errors:
 * map them with `ledgerWriteError`. No timeout (016's deadline is set by a second statement: use
 * applyTransfers for a transfer with one), no replay read-back.
 */
export function ledgerWriteStatement(batch: readonly Pending[]): { text: string; params: unknown[] } {
  checkUniqueKeys(batch);
  for (const pending of batch)
    if (pending.transfer.pending && pending.transfer.timeoutS !== null)
      throw new RangeError("ledgerWriteStatement: a pending transfer with a timeout needs applyTransfers");
  return { text: LEDGER_WRITE, params: writeParams(batch, false).params };
}

export interface ApplyOptions {
  /**
   * Check each no-overdraft account after EVERY transfer, in batch order, as applying them one by
   * one would (018's `p_serial`); default: against the batch's net effect (an atomic batch).
   */
  serial?: boolean;
}

/**
 * Writes `batch` (steps 1–4 of the module comment, in ONE call of the server-side
 * `ledger_write`) on `on`: inside a caller's transaction, so a saga can reserve funds and
 * record its own step atomically, or on the database itself, where the call is its own
 * autocommit transaction — one round trip (a second one reads back what replayed keys stored).
 * Results follow `batch`'s order.
 */
export async function applyTransfers(
  on: Queryable,
  batch: readonly Pending[],
  options: ApplyOptions = {},
): Promise<TransferResult[]> {
  checkUniqueKeys(batch);
  const { params, metadata } = writeParams(batch, options.serial === true);
  let rows: WrittenRow[];
  try {
    ({ rows } = await on.query<WrittenRow>(LEDGER_WRITE, params, { name: "ledger_write" }));
  } catch (err) {
    throw ledgerWriteError(err);
  }
  const createdAt = rows.find((row) => row.created_at !== null)?.created_at;
  const results: TransferResult[] = new Array(batch.length);
  const replayed: WrittenRow[] = [];
  for (const row of rows) {
    if (row.replayed) replayed.push(row);
    else {
      const transaction = createdTransaction(batch[row.ord - 1]!, row, createdAt!, metadata[row.ord - 1]!);
      results[row.ord - 1] = { transaction, replayed: false };
    }
  }
  if (replayed.length > 0) {
    const stored = await loadTransactions(
      on,
      replayed.map((row) => row.transaction_id),
    );
    replayed.forEach((row, k) => {
      results[row.ord - 1] = { transaction: stored[k]!, replayed: true };
    });
  }
  // One row per transfer, created or replayed; a hole would be a bug in the function.
  if (rows.length !== batch.length || results.includes(undefined as never))
    throw new Error(`ledger_write answered ${rows.length} of ${batch.length} transfers`);
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

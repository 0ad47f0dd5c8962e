/**
 * The double-entry ledger on PostgreSQL or PGlite (schema: migrations/001_ledger.sql; write path:
 * 007_ledger_write.sql).
 *
 * Every write is one READ COMMITTED transaction that, in this order (for transfers, batches and
 * reversals, inside ONE call of the server-side function `ledger_write`: one round trip):
 *   1. locks the touched account_balances rows in ascending account id (`ORDER BY … FOR UPDATE`):
 *      two transfers over the same accounts queue in the same order, so A→B and B→A never
 *      deadlock (PY-09; Blnk's PR #244 fixed exactly this missing order);
 *   2. inserts the transaction rows in ascending idem_key, `ON CONFLICT (idem_key) DO NOTHING`:
 *      the UNIQUE index decides duplicates, never a check-then-insert. A key already there is
 *      a replay: the stored transaction comes back only when its request fingerprint matches,
 *      otherwise LEDGER_IDEMPOTENCY_CONFLICT (never a "successful" lie, Blnk#374);
 *   3. inserts the entries (append-only; the deferred trigger checks balance at COMMIT, PY-08);
 *   4. updates the materialized balances with a conditional UPDATE whose WHERE refuses to take a
 *      no-overdraft account below zero (PY-14); a row it skips means insufficient funds, and the
 *      whole transaction rolls back.
 * Locks are only ever taken account rows first, then keys, each in ascending order; post/void/
 * reverse lock their one existing transaction row before any account. No wait cycle can form.
 *
 * `transferBatch` runs many transfers through the same steps in ONE database transaction
 * (TigerBeetle's lesson: amortize the commit): atomic per batch — all commit or none does.
 *
 * `transfer` goes through the group commit by default (ledger-group-commit.ts): concurrent
 * calls share one database transaction per group, each transfer's fate decided first in
 * arrival order (ledger-group-write.ts), so one refused transfer never fails its neighbours.
 * `createTransfers` is the same group write for a caller's own batch (TigerBeetle's
 * create_transfers: a result code per transfer, `linked` chains). Call `drain()` before
 * closing the database.
 *
 * @example
 * const ledger = new LedgerRepository(db);
 * const cash = await ledger.createAccount({ currency: "USD" });
 * const wallet = await ledger.createAccount({ currency: "USD", noOverdraft: true });
 * await ledger.transfer({ idemKey: "topup-1", from: cash.id, to: wallet.id, amount: 5_000n, currency: "USD" });
 * (await ledger.balance(wallet.id)).available; // 5000n
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { GroupCommitStats } from "@casebook/kit/group-commit";
import {
  CURRENCY_REASON,
  checkId,
  checkIdemKey,
  fingerprintOf,
  isCurrencyCode,
  type Metadata,
  normalizeTransfer,
  reversalEntries,
  type TransferRequest,
} from "../domain/ledger.ts";
import { decodeCursor, encodeCursor } from "../domain/ledger-cursor.ts";
import { ledgerErrors } from "../errors.ts";
import {
  TransferGroupCommit,
  type TransferGroupCommitOptions,
  transferResultOf,
} from "./ledger-group-commit.ts";
import { type GroupItem, type TransferOutcome, writeTransferGroup } from "./ledger-group-write.ts";
import {
  applyTransfers,
  bigintAsString,
  ENTRY_COLUMNS,
  type EntryRow,
  type LedgerAccount,
  type LedgerEntry,
  type LedgerTransaction,
  ledgerWriteError,
  loadTransactions,
  type TransactionStatus,
  type TransferResult,
  toEntry,
} from "./ledger-write.ts";

export type { LedgerAccount, LedgerEntry, LedgerTransaction, TransactionStatus, TransferResult };
export { applyTransfers, loadTransactions };

/** Credits − debits, in minor units of the account's currency. */
export interface Balance {
  accountId: bigint;
  currency: string;
  /** Posted credits − posted debits. */
  posted: bigint;
  /** Pending credits − pending debits (holds not yet posted or voided). */
  pending: bigint;
  /** Posted − pending debits: what can still be spent (pending credits are not spendable yet). */
  available: bigint;
  postedDebits: bigint;
  postedCredits: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
}

export interface Page<Item> {
  items: Item[];
  /** Pass back for the next (older) page; undefined on the last page. */
  nextCursor: string | undefined;
}

export interface PageRequest {
  limit?: number;
  cursor?: string;
}

export interface ReverseRequest {
  idemKey: string;
  /** Minor units to reverse (a partial refund); default: all that is left. */
  amount?: bigint;
  metadata?: Metadata;
}

export interface LedgerRepositoryOptions {
  /**
   * Group commit for `transfer` (ledger-group-commit.ts): concurrent single transfers share one
   * database transaction, each keeping its own outcome. Default on with GROUP_COMMIT_DEFAULTS;
   * `false`: each transfer is its own transaction (one ledger_write call).
   */
  groupCommit?: TransferGroupCommitOptions | false;
  /** Transfers in one `transferBatch` call (one database transaction). Default 1 000. */
  maxBatch?: number;
  /** Largest page `entries`/`transactions` return. Default 500. */
  maxPageSize?: number;
  /** Page size when the caller gives none. Default 50. */
  defaultPageSize?: number;
}

const READ_COMMITTED = { isolation: "read committed" } as const;

/** post/void inside `tx`: moves a pending transaction's amounts out of the pending columns. */
export async function settlePending(
  tx: Queryable,
  transactionId: bigint,
  outcome: "posted" | "voided",
): Promise<LedgerTransaction> {
  await settleHold(tx, transactionId, outcome);
  const [settled] = await loadTransactions(tx, [transactionId]);
  return settled!;
}

/**
 * post/void inside `tx`, without reading the transaction back (the saga's post or void of a
 * payment's hold): migration 020's `ledger_settle`, one round trip that locks the transaction row,
 * then its accounts in ascending id, and moves the amounts — so the merchant's balance rows are
 * held for that answer and the COMMIT only. A retried post or void of a settled row changes
 * nothing; any other state is LEDGER_TRANSACTION_NOT_PENDING, a post past the hold's deadline
 * (the database's clock) LEDGER_PENDING_EXPIRED (TigerBeetle's pending_transfer_expired).
 */
export async function settleHold(
  tx: Queryable,
  transactionId: bigint,
  outcome: "posted" | "voided",
): Promise<void> {
  const id = checkId(transactionId, "transactionId");
  const { rows } = await tx
    .query<SettleAnswer>(
      "SELECT prior_status, expires_at, expired FROM ledger_settle($1, $2)",
      [id, outcome],
      {
        name: "ledger_settle",
      },
    )
    .catch((err: unknown) => {
      throw ledgerWriteError(err);
    });
  const refused = settleRefusal({ transactionId: id, outcome }, rows[0]);
  if (refused !== undefined) throw refused;
}

/** One hold to post or void with `settleHolds`. */
export interface HoldSettlement {
  transactionId: bigint;
  outcome: "posted" | "voided";
}

/**
 * `settleHold` of many holds in ONE statement inside `tx` (the saga's group commit): ledger_settle
 * called once per hold, in input order — the caller orders them so that concurrent groups lock
 * balance rows in one order. Per hold, undefined when settled (or already settled the same way), or
 * the ledger error `settleHold` would throw; a database error throws, and the caller's transaction
 * is then aborted.
 */
export async function settleHolds(
  tx: Queryable,
  holds: readonly HoldSettlement[],
): Promise<(Error | undefined)[]> {
  if (holds.length === 0) return [];
  const statement = settleHoldsStatement(holds, 0);
  const { rows } = await tx
    .query<SettleAnswer & { ord: bigint }>(statement.text, statement.params)
    .catch((err: unknown) => {
      throw ledgerWriteError(err);
    });
  const byOrd = new Map(rows.map((r) => [Number(r.ord), r]));
  return holds.map((h, i) => settleRefusal(h, byOrd.get(i + 1)));
}

/**
 * `settleHolds` as a statement to compose — a CTE (`WITH settled AS (…)`) of a caller's larger
 * statement, its parameters `$offset+1…`: one row per hold found (`ord`, ledger_settle's answer
 * and `settled`, true when the hold is now in the outcome asked — `settleRefusal` would have
 * nothing to say), none for a hold that does not exist. The caller reads every row (the CTE
 * only runs as far as it is read) and makes the statement fail unless all `holds.length` are
 * settled.
 */
export function settleHoldsStatement(
  holds: readonly HoldSettlement[],
  offset: number,
): { text: string; params: unknown[] } {
  const ids = holds.map((h) => checkId(h.transactionId, "transactionId"));
  return {
    text: `SELECT u.ord, s.prior_status, s.expires_at, s.expired,
              (s.prior_status = u.outcome OR (s.prior_status = 'pending' AND NOT (u.outcome = 'posted' AND s.expired))) AS settled
         FROM (SELECT * FROM unnest($${offset + 1}::int8[], $${offset + 2}::text[]) WITH ORDINALITY AS u(id, outcome, ord) ORDER BY u.ord) u
         CROSS JOIN LATERAL ledger_settle(u.id, u.outcome) s`,
    params: [ids, holds.map((h) => h.outcome)],
  };
}

interface SettleAnswer {
  prior_status: TransactionStatus;
  expires_at: Date | null;
  expired: boolean;
}

/** What ledger_settle's answer means for `hold`: undefined when settled, else the ledger's error. */
function settleRefusal(hold: HoldSettlement, answer: SettleAnswer | undefined): Error | undefined {
  const id = String(hold.transactionId);
  if (answer === undefined) return ledgerErrors.create("LEDGER_TRANSACTION_NOT_FOUND", { fields: { id } });
  const status = answer.prior_status;
  if (status === hold.outcome) return undefined; // a retried post/void: already done, nothing done now
  if (status !== "pending") {
    return ledgerErrors.create("LEDGER_TRANSACTION_NOT_PENDING", {
      fields: { id, status, outcome: hold.outcome },
    });
  }
  if (hold.outcome === "posted" && answer.expired) {
    const fields = { id, expiresAt: answer.expires_at?.toISOString() };
    return ledgerErrors.create("LEDGER_PENDING_EXPIRED", { fields });
  }
  return undefined;
}

/** reverse inside `tx` (PY-15): new swapped entries referencing the original; nothing edited. */
export async function applyReversal(
  tx: Queryable,
  transactionId: bigint,
  request: ReverseRequest,
): Promise<TransferResult> {
  const id = checkId(transactionId, "transactionId");
  const idemKey = checkIdemKey(request.idemKey);
  const metadata = request.metadata ?? {};
  const amount = request.amount === undefined ? "all" : request.amount;
  const fingerprint = fingerprintOf({ kind: "reversal", of: id, amount, metadata });
  // Lock the original first: concurrent reversals of one transaction queue here, so two partial
  // refunds cannot both pass the "remaining" check below.
  const locked = await tx.query<{ status: TransactionStatus }>(
    "SELECT status FROM transactions WHERE id = $1 FOR NO KEY UPDATE",
    [id],
  );
  if (locked.rowCount === 0)
    throw ledgerErrors.create("LEDGER_TRANSACTION_NOT_FOUND", { fields: { id: String(id) } });
  const existing = await tx.query<{ id: bigint; fingerprint: string }>(
    "SELECT id, fingerprint FROM transactions WHERE idem_key = $1",
    [idemKey],
  );
  if (existing.rows[0]) {
    if (existing.rows[0].fingerprint !== fingerprint) {
      const fields = { idemKey, transactionId: existing.rows[0].id.toString() };
      throw ledgerErrors.create("LEDGER_IDEMPOTENCY_CONFLICT", { fields });
    }
    const [transaction] = await loadTransactions(tx, [existing.rows[0].id]);
    return { transaction: transaction!, replayed: true };
  }
  if (locked.rows[0]!.status !== "posted") {
    const reason = `only a posted transaction can be reversed; this one is ${locked.rows[0]!.status} (void a pending one)`;
    throw ledgerErrors.create("LEDGER_REVERSAL_INVALID", { fields: { reason } });
  }
  const [original] = await loadTransactions(tx, [id]);
  const entries = reversalEntries(original!.entries, await remainingToReverse(tx, original!), request.amount);
  const transfer = normalizeTransfer({ idemKey, entries, metadata });
  const [result] = await applyTransfers(tx, [{ transfer: { ...transfer, fingerprint }, reversesId: id }]);
  return result!;
}

async function remainingToReverse(tx: Queryable, original: LedgerTransaction): Promise<bigint> {
  const full = original.entries.reduce((sum, e) => (e.direction === "D" ? sum + e.amount : sum), 0n);
  const { rows } = await tx.query<{ reversed: bigint }>(
    `SELECT COALESCE(sum(e.amount), 0)::int8 AS reversed FROM transactions t JOIN entries e ON e.transaction_id = t.id
      WHERE t.reverses_id = $1 AND e.direction = 'D'`,
    [original.id],
  );
  return full - rows[0]!.reversed;
}

export interface CreateAccountRequest {
  currency: string;
  /** Refuse any debit that would take available (posted credits − posted and pending debits) below 0. */
  noOverdraft?: boolean;
  metadata?: Metadata;
}

type PageOptions = Required<Pick<LedgerRepositoryOptions, "maxPageSize" | "defaultPageSize">>;

function pageLimit(request: PageRequest, options: PageOptions): number {
  const limit = request.limit ?? options.defaultPageSize;
  if (!Number.isInteger(limit) || limit < 1 || limit > options.maxPageSize) {
    const fields = { field: "limit", reason: `limit must be an integer in 1..${options.maxPageSize}` };
    throw ledgerErrors.create("LEDGER_TRANSFER_INVALID", { fields });
  }
  return limit;
}

/** Keyset cursor: rows below it, newest first. `int8` max stands for "from the top". */
function cursorId(request: PageRequest): bigint {
  return request.cursor === undefined ? 9_223_372_036_854_775_807n : decodeCursor(request.cursor);
}

/** The ledger over a `Database`; see the module comment for how each write stays correct. */
export class LedgerRepository {
  readonly #db: Database;
  readonly #options: PageOptions & { maxBatch: number };
  readonly #group: TransferGroupCommit | undefined;

  constructor(db: Database, options: LedgerRepositoryOptions = {}) {
    this.#db = db;
    const { groupCommit = {}, ...rest } = options;
    this.#options = { maxBatch: 1_000, maxPageSize: 500, defaultPageSize: 50, ...rest };
    this.#group = groupCommit === false ? undefined : new TransferGroupCommit(db, groupCommit);
  }

  /** The group commit's counters (groups written, transfers, refusals); undefined when it is off. */
  get groupCommitStats(): GroupCommitStats | undefined {
    return this.#group?.stats;
  }

  /** Resolves once every transfer submitted so far is written (or failed): call before closing the database. */
  async drain(): Promise<void> {
    await this.#group?.drain();
  }

  /**
   * TigerBeetle's create_transfers: up to `maxBatch` transfers in ONE database transaction, each
   * with its own result code, decided in order as if applied one by one; `linked` chains commit
   * whole or not at all. Not atomic per batch, unlike `transferBatch`.
   */
  async createTransfers(
    items: readonly { request: TransferRequest; linked?: boolean; refuse?: GroupItem["refuse"] }[],
  ): Promise<TransferOutcome[]> {
    if (items.length === 0 || items.length > this.#options.maxBatch) {
      const reason = `a batch holds 1..${this.#options.maxBatch} transfers`;
      throw ledgerErrors.create("LEDGER_BATCH_INVALID", { fields: { reason, size: items.length } });
    }
    const group = items.map((item) => ({
      transfer: normalizeTransfer(item.request),
      linked: item.linked === true,
      ...(item.refuse === undefined ? {} : { refuse: item.refuse }),
    }));
    return writeTransferGroup(this.#db, group);
  }

  /** Opens an account and its zero balance row in one statement. */
  async createAccount(request: CreateAccountRequest): Promise<LedgerAccount> {
    if (!isCurrencyCode(request.currency)) {
      const fields = { field: "currency", reason: CURRENCY_REASON };
      throw ledgerErrors.create("LEDGER_TRANSFER_INVALID", { fields });
    }
    const { rows } = await this.#db.query<{
      id: bigint;
      currency: string;
      no_overdraft: boolean;
      metadata: Metadata;
      created_at: Date;
    }>(
      `WITH a AS (INSERT INTO accounts (currency, no_overdraft, metadata) VALUES ($1, $2, $3::jsonb)
                  RETURNING id, currency, no_overdraft, metadata, created_at),
            b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, no_overdraft FROM a)
       SELECT * FROM a`,
      [
        request.currency,
        request.noOverdraft === true,
        JSON.stringify(request.metadata ?? {}, bigintAsString),
      ],
    );
    const row = rows[0]!;
    return {
      id: row.id,
      currency: row.currency,
      noOverdraft: row.no_overdraft,
      metadata: row.metadata,
      createdAt: row.created_at,
    };
  }

  /**
   * One transfer (posted, or a pending hold with `pending: true`). The same idemKey with the same
   * parameters returns the stored transaction with `replayed: true`; with other parameters,
   * LEDGER_IDEMPOTENCY_CONFLICT.
   */
  async transfer(request: TransferRequest): Promise<TransferResult> {
    const transfer = normalizeTransfer(request);
    if (this.#group !== undefined)
      return transferResultOf(await this.#group.submit(transfer), transfer.idemKey);
    // One autocommit statement: ledger_write locks, writes and checks in the server (PY-09, PY-14).
    const [result] = await this.#apply([{ transfer, reversesId: null }]);
    return result!;
  }

  /**
   * One transfer through the group commit (or alone when it is off), answered with its result
   * code as `createTransfers` answers it (`ok`, `exists`, `exceeds_credits`, …) instead of a thrown
   * error: what the ledger API sends back. Rejects only with SQL_UNAVAILABLE or a full queue.
   */
  async submitTransfer(request: TransferRequest): Promise<TransferOutcome> {
    const transfer = normalizeTransfer(request);
    if (this.#group !== undefined) return this.#group.submit(transfer);
    const [outcome] = await writeTransferGroup(this.#db, [{ transfer }]);
    return outcome!;
  }

  /**
   * Up to `maxBatch` transfers in ONE database transaction: atomic per batch (one failing transfer,
   * e.g. insufficient funds, rolls back all of them). A no-overdraft account is checked against
   * the batch's net effect on it, since no state between two transfers of a batch is ever visible.
   */
  async transferBatch(requests: readonly TransferRequest[]): Promise<TransferResult[]> {
    if (requests.length === 0 || requests.length > this.#options.maxBatch) {
      const reason = `a batch holds 1..${this.#options.maxBatch} transfers`;
      throw ledgerErrors.create("LEDGER_BATCH_INVALID", { fields: { reason, size: requests.length } });
    }
    const batch = requests.map((request) => ({ transfer: normalizeTransfer(request), reversesId: null }));
    // One statement is one transaction: the batch commits whole or not at all.
    return this.#apply(batch);
  }

  /** applyTransfers as one autocommit statement, or in a transaction when a deadline is set after it. */
  #apply(batch: Parameters<typeof applyTransfers>[1]): Promise<TransferResult[]> {
    if (batch.every((p) => p.transfer.timeoutS === null)) return applyTransfers(this.#db, batch);
    return this.#db.transaction((tx) => applyTransfers(tx, batch), READ_COMMITTED);
  }

  /**
   * Voids up to `limit` pending transfers whose deadline has passed (016), soonest first, each in
   * its own transaction (settleHold: its row, then its accounts, the one lock order). A hold
   * posted or voided meanwhile is skipped. Answers how many it voided.
   */
  async voidExpired(limit = 100): Promise<number> {
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= 10_000))
      throw new RangeError(`limit must be an integer in [1, 10000], got ${limit}`);
    const { rows } = await this.#db.query<{ id: bigint }>(
      `SELECT id FROM transactions WHERE status = 'pending' AND expires_at <= now()
        ORDER BY expires_at LIMIT $1`,
      [limit],
    );
    let voided = 0;
    for (const { id } of rows) {
      const done = await this.#db.transaction(async (tx) => {
        const { rows: still } = await tx.query<{ id: bigint }>(
          "SELECT id FROM transactions WHERE id = $1 AND status = 'pending' FOR NO KEY UPDATE SKIP LOCKED",
          [id],
        );
        if (still.length === 0) return false; // settled meanwhile, or being settled now
        await settleHold(tx, id, "voided");
        return true;
      }, READ_COMMITTED);
      if (done) voided += 1;
    }
    return voided;
  }

  /** Posts a pending hold: its amounts move from pending to posted. Posting twice is a no-op. */
  post(pendingId: bigint): Promise<LedgerTransaction> {
    return this.#db.transaction((tx) => settlePending(tx, pendingId, "posted"), READ_COMMITTED);
  }

  /** Voids a pending hold: its amounts are released. Voiding twice is a no-op. */
  void(pendingId: bigint): Promise<LedgerTransaction> {
    return this.#db.transaction((tx) => settlePending(tx, pendingId, "voided"), READ_COMMITTED);
  }

  /** A reversal (refund), full or partial: new swapped entries linked to the original (PY-15). */
  reverse(transactionId: bigint, request: ReverseRequest): Promise<TransferResult> {
    return this.#db.transaction((tx) => applyReversal(tx, transactionId, request), READ_COMMITTED);
  }

  async transaction(id: bigint): Promise<LedgerTransaction> {
    const [found] = await loadTransactions(this.#db, [checkId(id, "transactionId")]);
    return found!;
  }

  async balance(accountId: bigint): Promise<Balance> {
    const { rows } = await this.#db.query<{
      currency: string;
      posted_debits: bigint;
      posted_credits: bigint;
      pending_debits: bigint;
      pending_credits: bigint;
    }>(
      `SELECT a.currency, b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits
         FROM account_balances b JOIN accounts a ON a.id = b.account_id WHERE b.account_id = $1`,
      [checkId(accountId, "accountId")],
    );
    const row = rows[0];
    if (!row)
      throw ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", { fields: { accountId: accountId.toString() } });
    const posted = row.posted_credits - row.posted_debits;
    return {
      accountId,
      currency: row.currency,
      posted,
      pending: row.pending_credits - row.pending_debits,
      available: posted - row.pending_debits,
      postedDebits: row.posted_debits,
      postedCredits: row.posted_credits,
      pendingDebits: row.pending_debits,
      pendingCredits: row.pending_credits,
    };
  }

  /** An account's entries, newest first, keyset-paginated. */
  async entries(accountId: bigint, request: PageRequest = {}): Promise<Page<LedgerEntry>> {
    const limit = pageLimit(request, this.#options);
    const { rows } = await this.#db.query<EntryRow>(
      `SELECT ${ENTRY_COLUMNS} FROM entries WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
      [checkId(accountId, "accountId"), cursorId(request), limit + 1],
    );
    const items = rows.slice(0, limit).map(toEntry);
    return { items, nextCursor: rows.length > limit ? encodeCursor(items.at(-1)!.id) : undefined };
  }

  /** The transactions touching an account (with all their entries), newest first, keyset-paginated. */
  async transactions(accountId: bigint, request: PageRequest = {}): Promise<Page<LedgerTransaction>> {
    const limit = pageLimit(request, this.#options);
    const { rows } = await this.#db.query<{ transaction_id: bigint }>(
      `SELECT DISTINCT transaction_id FROM entries WHERE account_id = $1 AND transaction_id < $2
        ORDER BY transaction_id DESC LIMIT $3`,
      [checkId(accountId, "accountId"), cursorId(request), limit + 1],
    );
    const ids = rows.slice(0, limit).map((row) => row.transaction_id);
    const items = await loadTransactions(this.#db, ids);
    return { items, nextCursor: rows.length > limit ? encodeCursor(ids.at(-1)!) : undefined };
  }
}

/**
 * One group of transfers in ONE database transaction, each with its own outcome (issue 14;
 * TigerBeetle's create_transfers). Inside one READ COMMITTED transaction:
 *
 *   1. lock every account the group names, once, in ascending id (PY-09's order), reading its
 *      currency, no-overdraft flag and balances, and read which of the group's keys are stored —
 *      one statement, one round trip (a group costs four: BEGIN, this, ledger_write, COMMIT);
 *   2. decide every transfer's fate in arrival order (domain/transfer-decisions.ts): the same
 *      outcomes applying them one by one would give;
 *   3. write only the `ok` ones with ONE call of `ledger_write` (007): one multi-row insert of
 *      transactions, one of entries, each balance row updated once with the group's aggregated
 *      deltas, PY-14's conditional update still the backstop;
 *   4. COMMIT, where 015's deferred check sums each ledger transaction once (PY-08).
 *
 * First, when the group has no chain, no caller's refusal, no timeout and every key once
 * (`atOnceIsSerial`), it is ONE autocommit ledger_write call with `serial` on — one round trip:
 * the function itself checks every no-overdraft account after each transfer in arrival order
 * (018), so whatever it accepts equals applying the group one by one, and every transfer is `ok`
 * or `exists`; if ledger_write refuses anything, that call left nothing and the group takes the
 * steps above.
 *
 * Every invariant is still the database's: a wrong decision cannot write an unbalanced, a
 * duplicate or an overdrawn transfer, it can only make the transaction fail. Two such failures
 * are handled here so that no innocent transfer fails:
 * - a key another process committed after step 1 read the keys comes back from ledger_write as
 *   a replay: the decisions built on "new key" are stale, so the transaction is rolled back and
 *   the group decided again (bounded: `maxRedecides`);
 * - any other error aborting the transaction splits the group in two halves (at a chain
 *   boundary: a linked chain is never cut) and writes them one after the other, in order,
 *   down to the one transfer whose own error it is. A lost link (SQL_UNAVAILABLE) is not split:
 *   every caller gets it, since retrying against an absent database only multiplies the wait.
 *
 * @example
 * const outcomes = await writeTransferGroup(db, [{ transfer: normalizeTransfer(request) }]);
 * outcomes[0]!.code; // "ok" | "exists" | "exceeds_credits" | …
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import type { Metadata } from "../domain/ledger.ts";
import {
  type AccountState,
  type Decision,
  decideTransfers,
  type GroupItem,
  type StoredTransfer,
} from "../domain/transfer-decisions.ts";
import { ledgerErrors } from "../errors.ts";
import { applyTransfers, type LedgerTransaction, loadTransactions } from "./ledger-write.ts";

export type { GroupItem };

/**
 * A transfer's outcome: its decision, plus the transaction when it is `ok` or `exists…`; or
 * `write_failed` when the database refused the write of this transfer (or of its linked chain)
 * even alone, with that error.
 */
export type TransferOutcome =
  | (Decision & { transaction?: LedgerTransaction })
  | { code: "write_failed"; error: unknown };

export interface GroupWriteOptions {
  /** Re-decisions after a concurrent writer stored one of the group's keys. Default 3. */
  maxRedecides?: number;
}

const READ_COMMITTED = { isolation: "read committed" } as const;

/** A decision went stale under the transaction: roll back and decide again. */
class StaleDecision extends Error {}

/** One row of the group's read: an account locked for it, or one of its keys already stored. */
interface GroupStateRow {
  kind: "account" | "key";
  account_id: bigint | null;
  currency: string | null;
  no_overdraft: boolean | null;
  posted_debits: bigint | null;
  posted_credits: bigint | null;
  pending_debits: bigint | null;
  pending_credits: bigint | null;
  id: bigint | null;
  idem_key: string | null;
  fingerprint: string | null;
}

/**
 * Step 1 in ONE round trip: the group's accounts, locked once each in ascending id (ORDER BY
 * under FOR UPDATE: the LockRows node sits above the Sort), and which of its keys are stored.
 * Both halves read one statement snapshot, taken before any lock wait: a key another writer
 * committed while this one waited is not seen here, and comes back from ledger_write as a
 * replay — the stale-decision path below decides the group again.
 */
const GROUP_STATE = `WITH locked AS MATERIALIZED (
    SELECT b.account_id, a.currency::text AS currency, b.no_overdraft,
           b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits
      FROM account_balances b JOIN accounts a ON a.id = b.account_id
     WHERE b.account_id = ANY($1::int8[]) ORDER BY b.account_id FOR UPDATE OF b)
  SELECT 'account' AS kind, l.*, NULL::int8 AS id, NULL::text AS idem_key, NULL::text AS fingerprint FROM locked l
  UNION ALL
  SELECT 'key', NULL, NULL, NULL, NULL, NULL, NULL, NULL, t.id, t.idem_key, t.fingerprint
    FROM transactions t WHERE t.idem_key = ANY($2::text[])`;

interface GroupState {
  accounts: Map<bigint, AccountState>;
  stored: Map<string, StoredTransfer & { transaction: LedgerTransaction }>;
}

async function readGroupState(tx: Queryable, items: readonly GroupItem[]): Promise<GroupState> {
  const ids = new Set<bigint>();
  // A transfer the caller refused locks nothing: its accounts may be another tenant's.
  for (const { transfer, refuse } of items)
    if (refuse === undefined) for (const e of transfer.entries) ids.add(e.accountId);
  const keys = [...new Set(items.map((item) => item.transfer.idemKey))];
  const { rows } = await tx.query<GroupStateRow>(GROUP_STATE, [[...ids].map(String), keys], {
    name: "ledger_group_state",
  });
  const accounts = new Map<bigint, AccountState>();
  const storedRows: GroupStateRow[] = [];
  for (const r of rows) {
    if (r.kind === "key") {
      storedRows.push(r);
      continue;
    }
    accounts.set(r.account_id!, {
      currency: r.currency!,
      noOverdraft: r.no_overdraft!,
      postedDebits: r.posted_debits!,
      postedCredits: r.posted_credits!,
      pendingDebits: r.pending_debits!,
      pendingCredits: r.pending_credits!,
    });
  }
  return { accounts, stored: await storedKeys(tx, storedRows) };
}

/** The stored keys' transactions, with what a replay is compared against (retries only: no round trip otherwise). */
async function storedKeys(
  tx: Queryable,
  rows: readonly GroupStateRow[],
): Promise<Map<string, StoredTransfer & { transaction: LedgerTransaction }>> {
  if (rows.length === 0) return new Map();
  const loaded = await loadTransactions(
    tx,
    rows.map((r) => r.id!),
  );
  return new Map(
    rows.map((r, i) => {
      const transaction = loaded[i]!;
      const metadata: Metadata = transaction.metadata;
      return [
        r.idem_key!,
        {
          fingerprint: r.fingerprint!,
          entries: transaction.entries,
          metadata,
          timeoutS: transaction.timeoutS,
          transaction,
        },
      ];
    }),
  );
}

/**
 * Step 3: the `ok` transfers through ledger_write. A key it finds stored (a replay, or LDI01 for
 * one stored with other parameters) was committed by another writer after step 1b: stale.
 */
async function writeDecided(tx: Queryable, items: readonly GroupItem[], okIndexes: readonly number[]) {
  let written: Awaited<ReturnType<typeof applyTransfers>>;
  try {
    written = await applyTransfers(
      tx,
      okIndexes.map((i) => ({ transfer: items[i]!.transfer, reversesId: null })),
    );
  } catch (error) {
    if (ledgerErrors.is(error, "LEDGER_IDEMPOTENCY_CONFLICT")) throw new StaleDecision();
    throw error;
  }
  if (written.some((result) => result.replayed)) throw new StaleDecision();
  return written;
}

/** Steps 1–3 inside `tx`; the caller commits. */
async function decideAndWrite(tx: Queryable, items: readonly GroupItem[]): Promise<TransferOutcome[]> {
  const { accounts, stored } = await readGroupState(tx, items);
  const decisions = decideTransfers(items, accounts, stored);
  const okIndexes = decisions.flatMap((d, i) => (d.code === "ok" ? [i] : []));
  const written = okIndexes.length === 0 ? [] : await writeDecided(tx, items, okIndexes);
  const byIndex = new Map(okIndexes.map((index, k) => [index, written[k]!.transaction]));
  return decisions.map((decision, i): TransferOutcome => {
    if (decision.code === "ok") return { ...decision, transaction: byIndex.get(i)! };
    if (decision.code !== "exists" && !decision.code.startsWith("exists_with_different_")) return decision;
    // Same key: the original's transaction, stored before or written by an earlier transfer of the group.
    const earlier = (decision as { earlier?: number }).earlier;
    const transaction =
      earlier === undefined ? stored.get(items[i]!.transfer.idemKey)!.transaction : byIndex.get(earlier)!;
    return { ...decision, transaction };
  });
}

/** Where a failing group is cut: the chain boundary nearest its middle, or nowhere (one chain). */
function splitPoint(items: readonly GroupItem[]): number | undefined {
  const boundaries: number[] = [];
  for (let i = 1; i < items.length; i++) if (!items[i - 1]!.linked) boundaries.push(i);
  if (boundaries.length === 0) return undefined;
  const middle = items.length / 2;
  return boundaries.reduce((best, b) => (Math.abs(b - middle) < Math.abs(best - middle) ? b : best));
}

/**
 * Whether the group can go as ONE ledger_write call with `serial` on (018): every key once, no
 * chain, no caller's refusal, no timeout (its deadline needs a second statement). The call then
 * checks each no-overdraft account after every transfer in arrival order, so what it accepts is
 * exactly what applying the transfers one by one would write; anything it refuses falls back to
 * the decided path, which finds whose fate it is.
 */
export function atOnceIsSerial(items: readonly GroupItem[]): boolean {
  const keys = new Set<string>();
  for (const { transfer, linked, refuse } of items) {
    if (linked || refuse || transfer.timeoutS !== null || keys.has(transfer.idemKey)) return false;
    keys.add(transfer.idemKey);
  }
  return true;
}

/**
 * The fast path: the whole group as ONE autocommit ledger_write call (one round trip, one
 * database transaction), when `atOnceIsSerial` says its outcome can only be every transfer `ok`
 * or `exists`. Anything ledger_write refuses (funds, an account, a key used otherwise, a
 * trigger) rolls the call back whole and answers undefined: the group then takes the decided
 * path, which finds whose fate it is. A lost link is rethrown, as on that path.
 */
async function writeAtOnce(
  db: Database,
  items: readonly GroupItem[],
): Promise<TransferOutcome[] | undefined> {
  try {
    const written = await applyTransfers(
      db,
      items.map((item) => ({ transfer: item.transfer, reversesId: null })),
      { serial: true },
    );
    return written.map((r) => ({ code: r.replayed ? "exists" : "ok", transaction: r.transaction }));
  } catch (error) {
    if (sqlErrors.is(error, "SQL_UNAVAILABLE")) throw error;
    return undefined;
  }
}

/**
 * Writes `items` in one database transaction and answers one outcome per item, in order (see
 * the module comment for the re-decide and split-and-retry rules). A transfer (or chain)
 * the database refuses even alone gets `write_failed` with the error; the call rejects only
 * when the database is unreachable (SQL_UNAVAILABLE).
 */
export async function writeTransferGroup(
  db: Database,
  items: readonly GroupItem[],
  options: GroupWriteOptions = {},
): Promise<TransferOutcome[]> {
  if (items.length === 0) return [];
  if (atOnceIsSerial(items)) {
    const outcomes = await writeAtOnce(db, items);
    if (outcomes !== undefined) return outcomes;
  }
  const maxRedecides = options.maxRedecides ?? 3;
  for (let attempt = 0; ; attempt++) {
    try {
      return await db.transaction((tx) => decideAndWrite(tx, items), READ_COMMITTED);
    } catch (error) {
      if (error instanceof StaleDecision && attempt < maxRedecides) continue;
      if (sqlErrors.is(error, "SQL_UNAVAILABLE")) throw error;
      const cut = splitPoint(items);
      // One transfer, or one chain: the error is its own, and its callers get it.
      if (cut === undefined) return items.map(() => ({ code: "write_failed", error }));
      const first = await writeTransferGroup(db, items.slice(0, cut), options);
      const second = await writeTransferGroup(db, items.slice(cut), options);
      return [...first, ...second];
    }
  }
}

/**
 * A merchant's ledger accounts: three per currency (payments brief conventions), created on
 * first use inside the caller's transaction, so a payment's first reserve and the accounts it
 * needs commit or roll back together.
 *
 * - `customer_funds`: the source of charges, a contra account whose negative balance is what
 *   customers paid in; it may go below zero by design.
 * - `merchant_pending`: authorized or captured, not yet paid out. No overdraft.
 * - `merchant_available`: paid out to the merchant's balance. No overdraft: a refund or payout
 *   the merchant cannot cover is refused by the ledger (PY-14), not recorded as a debt.
 *
 * Provisioning reads first (the common case: all three exist, no lock); when one is missing it
 * takes an advisory lock on (merchant, currency) and reads again, so two first payments racing
 * on PostgreSQL create ONE set (the second waits, then sees the first's rows) — never a
 * duplicate, never an orphan ledger account. Table: merchant_accounts (003_payments.sql).
 *
 * @example
 * const accounts = await db.transaction((tx) => ensureMerchantAccounts(tx, "acme", "USD"));
 * await ledger.transfer({ idemKey: "pay:1:reserve", from: accounts.customer_funds,
 *   to: accounts.merchant_pending, amount: 500n, currency: "USD", pending: true });
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import { CURRENCY_REASON, isCurrencyCode } from "../domain/ledger.ts";
import { ledgerErrors } from "../errors.ts";

export const ACCOUNT_ROLES = ["customer_funds", "merchant_pending", "merchant_available"] as const;
export type AccountRole = (typeof ACCOUNT_ROLES)[number];

/** Ledger account id of each role, for one merchant and currency. */
export type MerchantAccounts = Readonly<Record<AccountRole, bigint>>;

/** First key of the two-int advisory lock: keeps these locks apart from other users of hashtext keys. */
const PROVISIONING_LOCK_SPACE = 5_001;

const NO_OVERDRAFT: Readonly<Record<AccountRole, boolean>> = {
  customer_funds: false,
  merchant_pending: true,
  merchant_available: true,
};

/** Balances as the ledger defines them (ledger-repository.ts `Balance`): credits − debits. */
export interface AccountBalances {
  posted: bigint;
  pending: bigint;
  available: bigint;
}

export interface MerchantAccountView {
  accountId: bigint;
  currency: string;
  role: AccountRole;
  noOverdraft: boolean;
  createdAt: Date;
  balances: AccountBalances;
}

async function rolesOf(
  tx: Queryable,
  merchantId: string,
  currency: string,
): Promise<Map<AccountRole, bigint>> {
  const { rows } = await tx.query<{ role: AccountRole; account_id: bigint }>(
    "SELECT role, account_id FROM merchant_accounts WHERE merchant_id = $1 AND currency = $2",
    [merchantId, currency],
  );
  return new Map(rows.map((row) => [row.role, row.account_id]));
}

function complete(found: Map<AccountRole, bigint>): MerchantAccounts | undefined {
  if (found.size !== ACCOUNT_ROLES.length) return undefined;
  return Object.freeze(Object.fromEntries(found)) as MerchantAccounts;
}

/** Opens one ledger account, its zero balance row and its merchant link, in one statement. */
async function openAccount(tx: Queryable, merchantId: string, currency: string, role: AccountRole) {
  const { rows } = await tx.query<{ id: bigint }>(
    `WITH a AS (INSERT INTO accounts (currency, no_overdraft, metadata) VALUES ($2, $4, $5::jsonb)
                RETURNING id, no_overdraft),
          b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, no_overdraft FROM a),
          m AS (INSERT INTO merchant_accounts (merchant_id, currency, role, account_id)
                SELECT $1, $2, $3, id FROM a)
     SELECT id FROM a`,
    [merchantId, currency, role, NO_OVERDRAFT[role], JSON.stringify({ merchantId, role })],
  );
  return rows[0]!.id;
}

/** The merchant's three accounts in `currency` when all exist (a read, no lock); else undefined. */
export async function merchantAccountsIfComplete(
  q: Queryable,
  merchantId: string,
  currency: string,
): Promise<MerchantAccounts | undefined> {
  return isCurrencyCode(currency) ? complete(await rolesOf(q, merchantId, currency)) : undefined;
}

/**
 * The merchant's three accounts in `currency`, creating the missing ones in `tx` (call it inside
 * the transaction that first uses them). LEDGER_TRANSFER_INVALID for a malformed currency. The
 * merchant id is trusted: it comes from an authenticated API key, never from a request body.
 */
export async function ensureMerchantAccounts(
  tx: Queryable,
  merchantId: string,
  currency: string,
): Promise<MerchantAccounts> {
  if (!isCurrencyCode(currency)) {
    const fields = { field: "currency", reason: CURRENCY_REASON };
    throw ledgerErrors.create("LEDGER_TRANSFER_INVALID", { fields });
  }
  const existing = complete(await rolesOf(tx, merchantId, currency));
  if (existing) return existing;
  // One provisioning at a time per (merchant, currency): a transaction-scoped advisory lock, so it
  // needs no merchants row (the table is 003_payments.sql's, older than 005_merchants.sql) and is
  // released by COMMIT/ROLLBACK. A hashtext collision only makes two merchants queue, never share.
  await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
    PROVISIONING_LOCK_SPACE,
    `${merchantId}:${currency}`,
  ]);
  // READ COMMITTED: this statement sees what a racer committed while we waited for the lock.
  const found = await rolesOf(tx, merchantId, currency);
  for (const role of ACCOUNT_ROLES) {
    if (!found.has(role)) found.set(role, await openAccount(tx, merchantId, currency, role));
  }
  return complete(found)!;
}

interface ViewRow {
  account_id: bigint;
  currency: string;
  role: AccountRole;
  no_overdraft: boolean;
  created_at: Date;
  posted_debits: bigint;
  posted_credits: bigint;
  pending_debits: bigint;
  pending_credits: bigint;
}

const VIEW_SELECT = `SELECT m.account_id, m.currency, m.role, a.no_overdraft, a.created_at,
       b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits
  FROM merchant_accounts m
  JOIN accounts a ON a.id = m.account_id
  JOIN account_balances b ON b.account_id = m.account_id`;

function toView(row: ViewRow): MerchantAccountView {
  // Same arithmetic as LedgerRepository.balance (a test holds the two equal).
  const posted = row.posted_credits - row.posted_debits;
  return {
    accountId: row.account_id,
    currency: row.currency,
    role: row.role,
    noOverdraft: row.no_overdraft,
    createdAt: row.created_at,
    balances: {
      posted,
      pending: row.pending_credits - row.pending_debits,
      available: posted - row.pending_debits,
    },
  };
}

/** Every account of the merchant with its balances, by currency then role. At most 3 per currency. */
export async function listMerchantAccounts(
  db: Queryable,
  merchantId: string,
): Promise<MerchantAccountView[]> {
  const { rows } = await db.query<ViewRow>(
    `${VIEW_SELECT} WHERE m.merchant_id = $1 ORDER BY m.currency, m.role`,
    [merchantId],
  );
  return rows.map(toView);
}

/** One account, only if it is the merchant's: another merchant's id reads as absent (404, never 403). */
export async function findMerchantAccount(
  db: Queryable,
  merchantId: string,
  accountId: bigint,
): Promise<MerchantAccountView | undefined> {
  const { rows } = await db.query<ViewRow>(`${VIEW_SELECT} WHERE m.merchant_id = $1 AND m.account_id = $2`, [
    merchantId,
    accountId,
  ]);
  return rows[0] ? toView(rows[0]) : undefined;
}

/** The ids of every account the merchant owns: filters other tenants' legs out of shared transactions. */
export async function merchantAccountIds(db: Queryable, merchantId: string): Promise<Set<bigint>> {
  const { rows } = await db.query<{ account_id: bigint }>(
    "SELECT account_id FROM merchant_accounts WHERE merchant_id = $1",
    [merchantId],
  );
  return new Set(rows.map((row) => row.account_id));
}

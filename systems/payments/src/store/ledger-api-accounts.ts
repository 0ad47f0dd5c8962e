/**
 * Accounts of the ledger API (issue 14), each owned by one merchant (017_merchant_ledger_accounts.sql).
 * Opening one is idempotent per (merchant, Idempotency-Key): under a transaction-scoped advisory
 * lock on that pair, the key's row is read; absent, the account, its zero balance row and its
 * owner row are inserted in one statement. A retry with the same request finds the account its
 * first attempt opened (`replayed`); with another request, LEDGER_IDEMPOTENCY_CONFLICT.
 *
 * Tenancy: every read takes the merchant id (from the authenticated API key, never a body), and
 * an account that is not the merchant's reads as absent — the API answers 404, never 403.
 *
 * @example
 * const { account } = await openApiAccount(db, "acme", "acct-1", { currency: "USD", noOverdraft: true });
 * await ownedApiAccountIds(db, "acme", [account.id, 99n]); // Set { account.id }
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { fingerprintOf, type Metadata } from "../domain/ledger.ts";
import { ledgerErrors } from "../errors.ts";

export interface ApiAccountRequest {
  currency: string;
  noOverdraft: boolean;
  metadata: Metadata;
}

export interface ApiAccount {
  id: bigint;
  currency: string;
  noOverdraft: boolean;
  metadata: Metadata;
  createdAt: Date;
  /** Credits − debits, as LedgerRepository.balance computes them. */
  balances: { posted: bigint; pending: bigint; available: bigint };
}

/** First key of the two-int advisory lock (merchant-accounts.ts uses 5 001). */
const OPEN_LOCK_SPACE = 5_017;
const READ_COMMITTED = { isolation: "read committed" } as const;

interface AccountRow {
  id: bigint;
  currency: string;
  no_overdraft: boolean;
  metadata: Metadata;
  created_at: Date;
  posted_debits: bigint;
  posted_credits: bigint;
  pending_debits: bigint;
  pending_credits: bigint;
}

const ACCOUNT_SELECT = `SELECT a.id, a.currency::text AS currency, a.no_overdraft, a.metadata, a.created_at,
       b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits
  FROM ledger_api_accounts o
  JOIN accounts a ON a.id = o.account_id
  JOIN account_balances b ON b.account_id = o.account_id`;

function toAccount(row: AccountRow): ApiAccount {
  const posted = row.posted_credits - row.posted_debits;
  return {
    id: row.id,
    currency: row.currency,
    noOverdraft: row.no_overdraft,
    metadata: row.metadata,
    createdAt: row.created_at,
    balances: {
      posted,
      pending: row.pending_credits - row.pending_debits,
      available: posted - row.pending_debits,
    },
  };
}

/** Opens (or, for a retried key, finds) the merchant's account. */
export function openApiAccount(
  db: Database,
  merchantId: string,
  idemKey: string,
  request: ApiAccountRequest,
): Promise<{ account: ApiAccount; replayed: boolean }> {
  const fingerprint = fingerprintOf({ kind: "account", ...request });
  return db.transaction(async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
      OPEN_LOCK_SPACE,
      `${merchantId}:${idemKey}`,
    ]);
    const { rows: found } = await tx.query<AccountRow & { fingerprint: string }>(
      `${ACCOUNT_SELECT.replace("SELECT ", "SELECT o.fingerprint, ")} WHERE o.merchant_id = $1 AND o.idem_key = $2`,
      [merchantId, idemKey],
    );
    if (found[0]) {
      if (found[0].fingerprint !== fingerprint) {
        const fields = { idemKey, accountId: found[0].id.toString() };
        throw ledgerErrors.create("LEDGER_IDEMPOTENCY_CONFLICT", { fields });
      }
      return { account: toAccount(found[0]), replayed: true };
    }
    const { rows } = await tx.query<{ id: bigint }>(
      `WITH a AS (INSERT INTO accounts (currency, no_overdraft, metadata) VALUES ($3, $4, $5::jsonb)
                  RETURNING id, no_overdraft),
            b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, no_overdraft FROM a),
            o AS (INSERT INTO ledger_api_accounts (account_id, merchant_id, idem_key, fingerprint)
                  SELECT id, $1, $2, $6 FROM a)
       SELECT id FROM a`,
      [
        merchantId,
        idemKey,
        request.currency,
        request.noOverdraft,
        JSON.stringify(request.metadata),
        fingerprint,
      ],
    );
    const account = await findApiAccount(tx, merchantId, rows[0]!.id);
    return { account: account!, replayed: false };
  }, READ_COMMITTED);
}

/** The account with its balances if it is the merchant's; undefined otherwise (unknown and foreign look the same). */
export async function findApiAccount(
  db: Queryable,
  merchantId: string,
  accountId: bigint,
): Promise<ApiAccount | undefined> {
  const { rows } = await db.query<AccountRow>(
    `${ACCOUNT_SELECT} WHERE o.merchant_id = $1 AND o.account_id = $2`,
    [merchantId, accountId],
  );
  return rows[0] ? toAccount(rows[0]) : undefined;
}

/** Which of `ids` are the merchant's ledger-API accounts (ownership never changes once written). */
export async function ownedApiAccountIds(
  db: Queryable,
  merchantId: string,
  ids: readonly bigint[],
): Promise<Set<bigint>> {
  if (ids.length === 0) return new Set();
  const { rows } = await db.query<{ account_id: bigint }>(
    "SELECT account_id FROM ledger_api_accounts WHERE merchant_id = $1 AND account_id = ANY($2::int8[])",
    [merchantId, [...new Set(ids)].map(String)],
  );
  return new Set(rows.map((row) => row.account_id));
}

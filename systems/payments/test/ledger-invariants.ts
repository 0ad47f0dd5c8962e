/**
 * The ledger's global invariants, recomputed from the entries (the truth) with plain SQL:
 * every currency sums to zero, every materialized balance equals the sum of its entries
 * (posted ones in the posted columns, pending ones in the pending columns, voided nowhere),
 * and no no-overdraft account has a negative available balance.
 */
import assert from "node:assert/strict";
import type { Queryable } from "@casebook/infra/sql/sql";

export async function checkLedgerInvariants(db: Queryable): Promise<void> {
  const sums = await db.query<{ currency: string; status: string; net: bigint }>(
    `SELECT e.currency, t.status, sum(CASE e.direction WHEN 'C' THEN e.amount ELSE -e.amount END)::int8 AS net
       FROM entries e JOIN transactions t ON t.id = e.transaction_id GROUP BY e.currency, t.status`,
  );
  for (const row of sums.rows) assert.equal(row.net, 0n, `${row.currency} ${row.status} sums to ${row.net}`);
  const drift = await db.query<{ account_id: bigint }>(
    `WITH truth AS (
       SELECT e.account_id,
              COALESCE(sum(e.amount) FILTER (WHERE t.status = 'posted' AND e.direction = 'D'), 0)::int8 AS pd,
              COALESCE(sum(e.amount) FILTER (WHERE t.status = 'posted' AND e.direction = 'C'), 0)::int8 AS pc,
              COALESCE(sum(e.amount) FILTER (WHERE t.status = 'pending' AND e.direction = 'D'), 0)::int8 AS qd,
              COALESCE(sum(e.amount) FILTER (WHERE t.status = 'pending' AND e.direction = 'C'), 0)::int8 AS qc
         FROM entries e JOIN transactions t ON t.id = e.transaction_id GROUP BY e.account_id)
     SELECT b.account_id FROM account_balances b LEFT JOIN truth ON truth.account_id = b.account_id
      WHERE (b.posted_debits, b.posted_credits, b.pending_debits, b.pending_credits)
            IS DISTINCT FROM (COALESCE(truth.pd, 0), COALESCE(truth.pc, 0), COALESCE(truth.qd, 0), COALESCE(truth.qc, 0))`,
  );
  assert.deepEqual(drift.rows, [], "materialized balances equal the sum of their entries");
  const negative = await db.query(
    `SELECT account_id FROM account_balances
      WHERE no_overdraft AND posted_credits - posted_debits - pending_debits < 0`,
  );
  assert.deepEqual(negative.rows, [], "no no-overdraft account below zero");
}

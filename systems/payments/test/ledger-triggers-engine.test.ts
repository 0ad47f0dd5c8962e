/**
 * The ledger's SQL triggers and CHECKs on the engine, PGlite and PostgreSQL alike, at their edges
 * (issue 16: logic that lives in the database is tested there, not only through the repository's
 * pure twin): a transaction with no entry or one entry cannot commit (PY-07 "≥ 2 entries"), the
 * balance check runs at COMMIT and not per row (PY-08), transactions are append-only but for their
 * two-phase step, and the no-overdraft CHECK allows exactly zero and refuses one cent below (PY-14).
 */
import assert from "node:assert/strict";
import type { Queryable } from "@casebook/infra/sql/sql";
import { sqlState } from "@casebook/infra/sql/sql-state";
import { contractSuite } from "@casebook/lab/contract-suite";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";

type Leg = { account: bigint; direction: "D" | "C"; amount: bigint };

/** A transaction row and its entry rows by plain SQL (balances untouched): only the schema decides. */
async function insertRaw(tx: Queryable, key: string, status: string, legs: readonly Leg[]): Promise<bigint> {
  const inserted = await tx.query<{ id: bigint }>(
    "INSERT INTO transactions (idem_key, fingerprint, status) VALUES ($1, 'engine', $2) RETURNING id",
    [key, status],
  );
  const id = inserted.rows[0]!.id;
  for (const leg of legs) {
    await tx.query(
      "INSERT INTO entries (transaction_id, account_id, currency, direction, amount) VALUES ($1, $2, 'USD', $3, $4)",
      [id, leg.account, leg.direction, leg.amount],
    );
  }
  return id;
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  return assert.fail("expected the database to refuse");
}

async function twoAccounts(s: LedgerSubject, noOverdraft = false) {
  const a = await s.ledger.createAccount({ currency: "USD", noOverdraft });
  const b = await s.ledger.createAccount({ currency: "USD" });
  return { a: a.id, b: b.id };
}

contractSuite<LedgerSubject>("ledger triggers on the engine", ledgerBackends, (it) => {
  it("PY-07 a transaction with no entry cannot commit: 'double entry needs at least 2'", async (s) => {
    const error = await failure(s.db.transaction((tx) => insertRaw(tx, s.key("none"), "posted", [])));
    assert.match(error.message, /^transaction \d+ has 0 entry: double entry needs at least 2$/);
    assert.equal(sqlState(error), "23514");
  });

  it("PY-07 a single entry cannot commit: it is always unbalanced (amounts are > 0)", async (s) => {
    const { a } = await twoAccounts(s);
    const one = [{ account: a, direction: "D" as const, amount: 1n }];
    const error = await failure(s.db.transaction((tx) => insertRaw(tx, s.key("one"), "posted", one)));
    assert.match(error.message, /^transaction \d+ unbalanced: difference of 1 cents$/);
    const zero = [{ account: a, direction: "D" as const, amount: 0n }];
    const refused = await failure(s.db.transaction((tx) => insertRaw(tx, s.key("zero"), "posted", zero)));
    assert.equal(sqlState(refused), "23514", "a zero leg is refused by CHECK (amount > 0)");
  });

  it("PY-08 the balance check is deferred to COMMIT: legs that balance only together commit, 3 legs included", async (s) => {
    const { a, b } = await twoAccounts(s);
    const id = await s.db.transaction(async (tx) => {
      const txId = await insertRaw(tx, s.key("three"), "posted", [
        { account: a, direction: "D", amount: 700n },
        { account: b, direction: "C", amount: 300n },
      ]);
      // Unbalanced by 400 here, mid-transaction: no error until COMMIT.
      await tx.query(
        "INSERT INTO entries (transaction_id, account_id, currency, direction, amount) VALUES ($1, $2, 'USD', 'C', 400)",
        [txId, b],
      );
      return txId;
    });
    const { rows } = await s.db.query("SELECT 1 FROM entries WHERE transaction_id = $1", [id]);
    assert.equal(rows.length, 3);
  });

  it("PY-08 transactions are append-only but for their two-phase step: pending → posted once, never back, never deleted", async (s) => {
    const { a, b } = await twoAccounts(s);
    const legs: Leg[] = [
      { account: a, direction: "D", amount: 50n },
      { account: b, direction: "C", amount: 50n },
    ];
    const id = await s.db.transaction((tx) => insertRaw(tx, s.key("pend"), "pending", legs));
    await s.db.query("UPDATE transactions SET status = 'posted' WHERE id = $1", [id]);
    const back = await failure(s.db.query("UPDATE transactions SET status = 'voided' WHERE id = $1", [id]));
    assert.match(back.message, /^transaction \d+ is posted: only pending -> posted \| voided may change$/);
    const gone = await failure(s.db.query("DELETE FROM transactions WHERE id = $1", [id]));
    assert.equal(gone.message, "transactions are append-only");
  });

  it("PY-14 the no-overdraft CHECK allows a balance of exactly zero and refuses one cent below", async (s) => {
    const { a } = await twoAccounts(s, true);
    await s.db.query("UPDATE account_balances SET posted_credits = 100 WHERE account_id = $1", [a]);
    await s.db.query(
      "UPDATE account_balances SET posted_debits = 60, pending_debits = 40 WHERE account_id = $1",
      [a],
    );
    const below = await failure(
      s.db.query("UPDATE account_balances SET pending_debits = 41 WHERE account_id = $1", [a]),
    );
    assert.equal(sqlState(below), "23514");
    assert.match(below.message, /account_balances_no_overdraft/);
  });
});

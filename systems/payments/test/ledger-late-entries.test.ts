/**
 * PY-08 when the balance check runs early (019), on PGlite and PostgreSQL: `SET CONSTRAINTS ALL
 * IMMEDIATE` fires 015's once-per-transaction check at once; an entry inserted afterwards into the
 * same ledger transaction must still be checked at COMMIT. Before 019 this committed 5 against 105.
 */
import assert from "node:assert/strict";
import type { Queryable } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";

async function twoAccounts(s: LedgerSubject): Promise<[bigint, bigint]> {
  const a = await s.ledger.createAccount({ currency: "USD" });
  const b = await s.ledger.createAccount({ currency: "USD" });
  return [a.id, b.id];
}

/** A balanced ledger transaction (5 from a to b), its check fired at once, then `late` entries. */
async function checkedEarlyThen(
  tx: Queryable,
  key: string,
  [a, b]: [bigint, bigint],
  late: readonly ["D" | "C", bigint][],
): Promise<bigint> {
  const { rows } = await tx.query<{ id: bigint }>(
    "INSERT INTO transactions (idem_key, fingerprint, status) VALUES ($1, 'f', 'posted') RETURNING id",
    [key],
  );
  const id = rows[0]!.id;
  await tx.query(
    `INSERT INTO entries (transaction_id, account_id, currency, direction, amount)
     VALUES ($1, $2, 'USD', 'D', 5), ($1, $3, 'USD', 'C', 5)`,
    [id, a, b],
  );
  await tx.query("SET CONSTRAINTS ALL IMMEDIATE");
  await tx.query("SET CONSTRAINTS ALL DEFERRED");
  for (const [direction, amount] of late) {
    await tx.query(
      "INSERT INTO entries (transaction_id, account_id, currency, direction, amount) VALUES ($1, $2, 'USD', $3, $4)",
      [id, direction === "D" ? a : b, direction, amount],
    );
  }
  return id;
}

contractSuite<LedgerSubject>("ledger entries after an early check", ledgerBackends, (it) => {
  it("PY-08 an entry added after SET CONSTRAINTS ALL IMMEDIATE ran the check is checked again at COMMIT", async (s) => {
    const accounts = await twoAccounts(s);
    const key = s.key("late");
    let id: bigint | undefined;
    const caught = await s.db
      .transaction(async (tx) => {
        id = await checkedEarlyThen(tx, key, accounts, [["D", 100n]]);
      })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    assert.ok(caught instanceof Error, "the unbalanced transaction committed");
    assert.equal(caught.message, `transaction ${id} unbalanced: difference of 100 cents`);
    const { rows } = await s.db.query("SELECT 1 FROM transactions WHERE idem_key = $1", [key]);
    assert.equal(rows.length, 0, "rolled back whole");
  });

  it("PY-08 late entries that balance each other still commit", async (s) => {
    const accounts = await twoAccounts(s);
    const key = s.key("late-ok");
    const id = await s.db.transaction((tx) =>
      checkedEarlyThen(tx, key, accounts, [
        ["D", 100n],
        ["C", 100n],
      ]),
    );
    const { rows } = await s.db.query<{ n: bigint }>(
      "SELECT count(*)::int8 AS n FROM entries WHERE transaction_id = $1",
      [id],
    );
    assert.equal(rows[0]!.n, 4n);
    // The balances were not moved by these raw inserts: only the entries are checked here.
    await s.db.query(
      `UPDATE account_balances SET posted_debits = posted_debits + 105 WHERE account_id = $1`,
      [accounts[0]],
    );
    await s.db.query(
      `UPDATE account_balances SET posted_credits = posted_credits + 105 WHERE account_id = $1`,
      [accounts[1]],
    );
    await checkLedgerInvariants(s.db);
  });
});

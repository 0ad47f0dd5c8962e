/** The ledger's contract, on PGlite (memory) and PostgreSQL alike: PY-07, PY-08, PY-14, PY-15, PY-16. */
import assert from "node:assert/strict";
import type { Queryable } from "@casebook/infra/sql/sql";
import { isUniqueViolation, sqlState } from "@casebook/infra/sql/sql-state";
import { contractSuite } from "@casebook/lab/contract-suite";
import { ledgerErrors } from "../src/errors.ts";
import type { LedgerAccount } from "../src/store/ledger-repository.ts";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

async function funded(subject: LedgerSubject, amount: bigint, currency = "USD") {
  const world = await subject.ledger.createAccount({ currency });
  const wallet = await subject.ledger.createAccount({ currency, noOverdraft: true });
  if (amount > 0n) {
    await subject.ledger.transfer({
      idemKey: subject.key("fund"),
      from: world.id,
      to: wallet.id,
      amount,
      currency,
    });
  }
  return { world, wallet };
}

/** Inserts a transaction and its entries with plain SQL, bypassing the repository: the DB must hold alone. */
async function rawTransaction(
  tx: Queryable,
  idemKey: string,
  legs: readonly [LedgerAccount, "D" | "C", bigint][],
): Promise<bigint> {
  const { rows } = await tx.query<{ id: bigint }>(
    "INSERT INTO transactions (idem_key, fingerprint, status) VALUES ($1, 'raw', 'posted') RETURNING id",
    [idemKey],
  );
  const id = rows[0]!.id;
  for (const [account, direction, amount] of legs) {
    await tx.query(
      "INSERT INTO entries (transaction_id, account_id, currency, direction, amount) VALUES ($1, $2, $3, $4, $5)",
      [id, account.id, account.currency, direction, amount],
    );
    const column = direction === "D" ? "posted_debits" : "posted_credits";
    await tx.query(`UPDATE account_balances SET ${column} = ${column} + $2 WHERE account_id = $1`, [
      account.id,
      amount,
    ]);
  }
  return id;
}

contractSuite<LedgerSubject>("ledger", ledgerBackends, (it) => {
  it("PY-07 a transfer is two entries, debit equal to credit, bigint cents, balances in the same transaction", async (s) => {
    const { world, wallet } = await funded(s, 0n);
    const { transaction, replayed } = await s.ledger.transfer({
      idemKey: s.key("t"),
      from: world.id,
      to: wallet.id,
      amount: 12_345n,
      currency: "USD",
      metadata: { order: "o-1" },
    });
    assert.equal(replayed, false);
    assert.equal(transaction.status, "posted");
    assert.deepEqual(transaction.metadata, { order: "o-1" });
    assert.deepEqual(
      transaction.entries.map((e) => [e.accountId, e.direction, e.amount]),
      [
        [world.id, "D", 12_345n],
        [wallet.id, "C", 12_345n],
      ],
    );
    assert.equal(typeof transaction.entries[0]!.amount, "bigint");
    assert.equal((await s.ledger.balance(wallet.id)).posted, 12_345n);
    assert.equal((await s.ledger.balance(world.id)).posted, -12_345n);
    assert.deepEqual(await s.ledger.transaction(transaction.id), transaction);
  });

  it("PY-08 debiting 5000 and crediting 5000 commits", async (s) => {
    const a = await s.ledger.createAccount({ currency: "USD" });
    const b = await s.ledger.createAccount({ currency: "USD" });
    const id = await s.db.transaction((tx) =>
      rawTransaction(tx, s.key("ok"), [
        [a, "D", 5000n],
        [b, "C", 5000n],
      ]),
    );
    assert.equal((await s.ledger.transaction(id)).entries.length, 2);
  });

  it("PY-08 5000 against 4900 fails at COMMIT with 'transaction N unbalanced: difference of 100 cents' and rolls back", async (s) => {
    const a = await s.ledger.createAccount({ currency: "USD" });
    const b = await s.ledger.createAccount({ currency: "USD" });
    let insertedId: bigint | undefined;
    const caught = await rejection(
      s.db.transaction(async (tx) => {
        insertedId = await rawTransaction(tx, s.key("bad"), [
          [a, "D", 5000n],
          [b, "C", 4900n],
        ]);
        // Every INSERT succeeded: the check is deferred to COMMIT.
      }),
    );
    assert.ok(insertedId !== undefined, "the inserts ran before the failure");
    assert.equal((caught as Error).message, `transaction ${insertedId} unbalanced: difference of 100 cents`);
    assert.equal(sqlState(caught), "23514");
    const left = await s.db.query("SELECT 1 FROM transactions WHERE id = $1", [insertedId]);
    assert.equal(left.rowCount, 0, "rolled back");
    assert.equal((await s.ledger.balance(a.id)).postedDebits, 0n);
  });

  it("PY-08 PY-16 balance is checked per currency: 5000 USD cannot balance 5000 BRL", async (s) => {
    const usd = await s.ledger.createAccount({ currency: "USD" });
    const brl = await s.ledger.createAccount({ currency: "BRL" });
    const caught = await rejection(
      s.db.transaction((tx) =>
        rawTransaction(tx, s.key("fx"), [
          [usd, "D", 5000n],
          [brl, "C", 5000n],
        ]),
      ),
    );
    assert.match((caught as Error).message, /^transaction \d+ unbalanced: difference of -5000 cents$/);
    assert.equal((caught as { detail?: string }).detail, "currency BRL, in minor units");
  });

  it("PY-08 UPDATE and DELETE on entries fail: 'entries are append-only'", async (s) => {
    const { wallet } = await funded(s, 100n);
    const page = await s.ledger.entries(wallet.id);
    const entryId = page.items[0]!.id;
    const update = await rejection(s.db.query("UPDATE entries SET amount = 1 WHERE id = $1", [entryId]));
    assert.equal((update as Error).message, "entries are append-only");
    const remove = await rejection(s.db.query("DELETE FROM entries WHERE id = $1", [entryId]));
    assert.equal((remove as Error).message, "entries are append-only");
    const truncate = await rejection(s.db.exec("TRUNCATE entries CASCADE"));
    assert.equal((truncate as Error).message, "entries are append-only");
    const edit = await rejection(
      s.db.query("UPDATE transactions SET metadata = '{}' WHERE id = $1", [page.items[0]!.transactionId]),
    );
    assert.match((edit as Error).message, /only pending -> posted \| voided may change/);
  });

  it("PY-08 a second transaction with the same idem_key violates UNIQUE", async (s) => {
    const a = await s.ledger.createAccount({ currency: "USD" });
    const b = await s.ledger.createAccount({ currency: "USD" });
    const key = s.key("dup");
    const legs: [LedgerAccount, "D" | "C", bigint][] = [
      [a, "D", 10n],
      [b, "C", 10n],
    ];
    await s.db.transaction((tx) => rawTransaction(tx, key, legs));
    const caught = await rejection(s.db.transaction((tx) => rawTransaction(tx, key, legs)));
    assert.ok(isUniqueViolation(caught, "transactions_idem_key_key"), String(caught));
  });

  it("PY-07 an entry in another currency than its account's is refused, by the repository and by the schema", async (s) => {
    const usd = await s.ledger.createAccount({ currency: "USD" });
    const other = await s.ledger.createAccount({ currency: "USD" });
    const caught = await rejection(
      s.ledger.transfer({ idemKey: s.key("cur"), from: usd.id, to: other.id, amount: 5n, currency: "EUR" }),
    );
    assert.ok(ledgerErrors.is(caught, "LEDGER_CURRENCY_MISMATCH"));
    const fk = await rejection(
      s.db.transaction((tx) =>
        rawTransaction(tx, s.key("cur-raw"), [
          [{ ...usd, currency: "EUR" }, "D", 5n],
          [{ ...other, currency: "EUR" }, "C", 5n],
        ]),
      ),
    );
    assert.equal(sqlState(fk), "23503");
  });

  it("a replayed idem_key returns the stored transaction only when the parameters match", async (s) => {
    const { world, wallet } = await funded(s, 0n);
    const request = { idemKey: s.key("idem"), from: world.id, to: wallet.id, amount: 700n, currency: "USD" };
    const first = await s.ledger.transfer(request);
    const again = await s.ledger.transfer({ ...request });
    assert.equal(again.replayed, true);
    assert.deepEqual(again.transaction, first.transaction);
    assert.equal((await s.ledger.balance(wallet.id)).posted, 700n, "applied once");
    const lie = await rejection(s.ledger.transfer({ ...request, amount: 701n }));
    assert.ok(ledgerErrors.is(lie, "LEDGER_IDEMPOTENCY_CONFLICT"));
    assert.equal(lie.fields.transactionId, first.transaction.id.toString());
    const pendingLie = await rejection(s.ledger.transfer({ ...request, pending: true }));
    assert.ok(ledgerErrors.is(pendingLie, "LEDGER_IDEMPOTENCY_CONFLICT"));
  });

  it("PY-14 a debit beyond a no-overdraft balance is refused and writes nothing; the schema refuses it too", async (s) => {
    const { world, wallet } = await funded(s, 1_000n);
    const key = s.key("over");
    const caught = await rejection(
      s.ledger.transfer({ idemKey: key, from: wallet.id, to: world.id, amount: 1_001n, currency: "USD" }),
    );
    assert.ok(ledgerErrors.is(caught, "LEDGER_INSUFFICIENT_FUNDS"));
    assert.deepEqual(caught.fields.accountIds, [wallet.id.toString()]);
    assert.equal((await s.db.query("SELECT 1 FROM transactions WHERE idem_key = $1", [key])).rowCount, 0);
    await s.ledger.transfer({
      idemKey: s.key("exact"),
      from: wallet.id,
      to: world.id,
      amount: 1_000n,
      currency: "USD",
    });
    assert.equal((await s.ledger.balance(wallet.id)).available, 0n);
    const check = await rejection(
      s.db.query("UPDATE account_balances SET posted_debits = posted_debits + 1 WHERE account_id = $1", [
        wallet.id,
      ]),
    );
    assert.equal(sqlState(check), "23514");
  });

  it("PY-16 authorization then capture: a pending hold takes availability, post makes it posted", async (s) => {
    const { world, wallet } = await funded(s, 1_000n);
    const hold = await s.ledger.transfer({
      idemKey: s.key("auth"),
      from: wallet.id,
      to: world.id,
      amount: 600n,
      currency: "USD",
      pending: true,
    });
    assert.equal(hold.transaction.status, "pending");
    assert.deepEqual(
      [(await s.ledger.balance(wallet.id)).posted, (await s.ledger.balance(wallet.id)).available],
      [1_000n, 400n],
    );
    const second = await rejection(
      s.ledger.transfer({
        idemKey: s.key("auth2"),
        from: wallet.id,
        to: world.id,
        amount: 401n,
        currency: "USD",
        pending: true,
      }),
    );
    assert.ok(ledgerErrors.is(second, "LEDGER_INSUFFICIENT_FUNDS"), "holds count against availability");
    const posted = await s.ledger.post(hold.transaction.id);
    assert.equal(posted.status, "posted");
    const balance = await s.ledger.balance(wallet.id);
    assert.deepEqual([balance.posted, balance.pending, balance.available], [400n, 0n, 400n]);
    assert.equal((await s.ledger.post(hold.transaction.id)).status, "posted", "posting twice is a no-op");
    assert.equal((await s.ledger.balance(wallet.id)).posted, 400n);
    const voidPosted = await rejection(s.ledger.void(hold.transaction.id));
    assert.ok(ledgerErrors.is(voidPosted, "LEDGER_TRANSACTION_NOT_PENDING"));
  });

  it("PY-16 a voided hold releases the funds and can no longer be posted", async (s) => {
    const { world, wallet } = await funded(s, 500n);
    const hold = await s.ledger.transfer({
      idemKey: s.key("auth"),
      from: wallet.id,
      to: world.id,
      amount: 500n,
      currency: "USD",
      pending: true,
    });
    assert.equal((await s.ledger.balance(world.id)).pending, 500n);
    assert.equal((await s.ledger.void(hold.transaction.id)).status, "voided");
    const balance = await s.ledger.balance(wallet.id);
    assert.deepEqual([balance.posted, balance.pending, balance.available], [500n, 0n, 500n]);
    assert.equal((await s.ledger.balance(world.id)).pending, 0n);
    assert.ok(
      ledgerErrors.is(await rejection(s.ledger.post(hold.transaction.id)), "LEDGER_TRANSACTION_NOT_PENDING"),
    );
    assert.ok(ledgerErrors.is(await rejection(s.ledger.post(999_999_999n)), "LEDGER_TRANSACTION_NOT_FOUND"));
  });

  it("PY-16 several currencies: an FX transfer balances per currency, balances are per currency", async (s) => {
    const usdPayer = await s.ledger.createAccount({ currency: "USD" });
    const usdDesk = await s.ledger.createAccount({ currency: "USD" });
    const brlDesk = await s.ledger.createAccount({ currency: "BRL" });
    const brlPayee = await s.ledger.createAccount({ currency: "BRL" });
    const { transaction } = await s.ledger.transfer({
      idemKey: s.key("fx"),
      entries: [
        { accountId: usdPayer.id, currency: "USD", direction: "D", amount: 1_000n },
        { accountId: usdDesk.id, currency: "USD", direction: "C", amount: 1_000n },
        { accountId: brlDesk.id, currency: "BRL", direction: "D", amount: 5_400n },
        { accountId: brlPayee.id, currency: "BRL", direction: "C", amount: 5_400n },
      ],
    });
    assert.equal(transaction.entries.length, 4);
    assert.equal((await s.ledger.balance(brlPayee.id)).posted, 5_400n);
    assert.equal((await s.ledger.balance(brlPayee.id)).currency, "BRL");
    assert.equal((await s.ledger.balance(usdDesk.id)).posted, 1_000n);
  });

  it("PY-15 a refund is new swapped entries linked by reference; the original is untouched", async (s) => {
    const { world, wallet } = await funded(s, 0n);
    const payment = await s.ledger.transfer({
      idemKey: s.key("pay"),
      from: world.id,
      to: wallet.id,
      amount: 900n,
      currency: "USD",
    });
    const refund = await s.ledger.reverse(payment.transaction.id, { idemKey: s.key("refund") });
    assert.equal(refund.transaction.reversesId, payment.transaction.id);
    assert.deepEqual(
      refund.transaction.entries.map((e) => [e.accountId, e.direction, e.amount]),
      [
        [world.id, "C", 900n],
        [wallet.id, "D", 900n],
      ],
    );
    assert.deepEqual(
      await s.ledger.transaction(payment.transaction.id),
      payment.transaction,
      "nothing edited",
    );
    assert.equal((await s.ledger.balance(wallet.id)).posted, 0n);
    assert.equal((await s.ledger.entries(wallet.id)).items.length, 2, "both entries stay");
    const again = await rejection(s.ledger.reverse(payment.transaction.id, { idemKey: s.key("refund2") }));
    assert.ok(ledgerErrors.is(again, "LEDGER_REVERSAL_INVALID"), "already fully reversed");
  });

  it("PY-15 PY-16 partial refunds add up to at most the original; a replayed refund is not applied twice", async (s) => {
    const { world, wallet } = await funded(s, 0n);
    const payment = await s.ledger.transfer({
      idemKey: s.key("pay"),
      from: world.id,
      to: wallet.id,
      amount: 100n,
      currency: "USD",
    });
    const key = s.key("r1");
    const first = await s.ledger.reverse(payment.transaction.id, { idemKey: key, amount: 30n });
    const replay = await s.ledger.reverse(payment.transaction.id, { idemKey: key, amount: 30n });
    assert.equal(replay.replayed, true);
    assert.equal(replay.transaction.id, first.transaction.id);
    const conflict = await rejection(s.ledger.reverse(payment.transaction.id, { idemKey: key, amount: 31n }));
    assert.ok(ledgerErrors.is(conflict, "LEDGER_IDEMPOTENCY_CONFLICT"));
    const over = await rejection(
      s.ledger.reverse(payment.transaction.id, { idemKey: s.key("r2"), amount: 71n }),
    );
    assert.ok(ledgerErrors.is(over, "LEDGER_REVERSAL_INVALID"));
    await s.ledger.reverse(payment.transaction.id, { idemKey: s.key("r3"), amount: 70n });
    assert.equal((await s.ledger.balance(wallet.id)).posted, 0n);
    const pending = await s.ledger.transfer({
      idemKey: s.key("hold"),
      from: world.id,
      to: wallet.id,
      amount: 5n,
      currency: "USD",
      pending: true,
    });
    const notPosted = await rejection(s.ledger.reverse(pending.transaction.id, { idemKey: s.key("r4") }));
    assert.ok(ledgerErrors.is(notPosted, "LEDGER_REVERSAL_INVALID"), "a hold is voided, not reversed");
  });

  it("a batch commits many transfers in one transaction, atomic: one failure writes none", async (s) => {
    const { world, wallet } = await funded(s, 0n);
    const requests = Array.from({ length: 100 }, (_, i) => ({
      idemKey: s.key(`b${i}`),
      from: world.id,
      to: wallet.id,
      amount: BigInt(i + 1),
      currency: "USD",
    }));
    const results = await s.ledger.transferBatch(requests);
    assert.deepEqual(
      results.map((r) => r.transaction.idemKey),
      requests.map((r) => r.idemKey),
      "results in request order",
    );
    assert.equal((await s.ledger.balance(wallet.id)).posted, 5_050n);
    const replay = await s.ledger.transferBatch([requests[0]!, { ...requests[1]!, idemKey: s.key("new") }]);
    assert.deepEqual(
      replay.map((r) => r.replayed),
      [true, false],
    );
    const before = await s.ledger.balance(wallet.id);
    const failing = [
      { idemKey: s.key("ok"), from: world.id, to: wallet.id, amount: 1n, currency: "USD" },
      { idemKey: s.key("no"), from: wallet.id, to: world.id, amount: 1_000_000n, currency: "USD" },
    ];
    assert.ok(ledgerErrors.is(await rejection(s.ledger.transferBatch(failing)), "LEDGER_INSUFFICIENT_FUNDS"));
    assert.deepEqual(
      await s.ledger.balance(wallet.id),
      before,
      "the good transfer rolled back with the bad one",
    );
    const dup = await rejection(s.ledger.transferBatch([failing[0]!, failing[0]!]));
    assert.ok(ledgerErrors.is(dup, "LEDGER_BATCH_INVALID"));
    assert.ok(ledgerErrors.is(await rejection(s.ledger.transferBatch([])), "LEDGER_BATCH_INVALID"));
  });

  it("an account's entries and transactions page newest first, each exactly once", async (s) => {
    const { world, wallet } = await funded(s, 0n);
    for (let i = 0; i < 5; i++) {
      await s.ledger.transfer({
        idemKey: s.key(`p${i}`),
        from: world.id,
        to: wallet.id,
        amount: 10n,
        currency: "USD",
      });
    }
    const seen: bigint[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const result = await s.ledger.transactions(wallet.id, { limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...result.items.map((t) => t.id));
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    assert.equal(seen.length, 5);
    assert.deepEqual(
      seen,
      [...seen].sort((a, b) => (a > b ? -1 : 1)),
    );
    const entries = await s.ledger.entries(wallet.id, { limit: 3 });
    assert.equal(entries.items.length, 3);
    const rest = await s.ledger.entries(wallet.id, { limit: 3, cursor: entries.nextCursor! });
    assert.equal(rest.items.length, 2);
    assert.equal(rest.nextCursor, undefined);
    assert.ok(rest.items.every((e) => e.id < entries.items.at(-1)!.id));
    const bad = await rejection(s.ledger.entries(wallet.id, { cursor: "not-a-cursor" }));
    assert.ok(ledgerErrors.is(bad, "LEDGER_CURSOR_INVALID"));
  });

  it("PY-07 after all the cases above, every currency sums to zero and every balance equals its entries", async (s) => {
    await checkLedgerInvariants(s.db);
  });
});

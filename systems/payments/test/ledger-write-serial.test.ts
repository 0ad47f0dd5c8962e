/**
 * `ledger_write` as 018 left it, on PGlite and PostgreSQL: with `serial` a no-overdraft account
 * must stay covered after each transfer in batch order (what lets the group commit send any
 * plain group as one call), without it the batch's net effect decides (an atomic batch, as
 * before); and the short answer (ids only) still gives callers exactly the transaction the
 * database stored — created or replayed.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { normalizeTransfer, type TransferRequest } from "../src/domain/ledger.ts";
import { ledgerErrors } from "../src/errors.ts";
import { applyTransfers, loadTransactions } from "../src/store/ledger-repository.ts";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";

async function fundedWallet(s: LedgerSubject, amount: bigint) {
  const world = await s.ledger.createAccount({ currency: "USD" });
  const wallet = await s.ledger.createAccount({ currency: "USD", noOverdraft: true });
  await s.ledger.transfer({ idemKey: s.key("fund"), from: world.id, to: wallet.id, amount, currency: "USD" });
  return { world: world.id, wallet: wallet.id };
}

function pendingOf(requests: readonly TransferRequest[]) {
  return requests.map((request) => ({ transfer: normalizeTransfer(request), reversesId: null }));
}

contractSuite<LedgerSubject>("ledger_write serial and net checks", ledgerBackends, (it) => {
  it("PY-14 with serial, a no-overdraft account must stay covered after each transfer in order; without, the net decides", async (s) => {
    const { world, wallet } = await fundedWallet(s, 100n);
    // 100 − 120 + 50: the net (30) is covered, the first step (−20) is not.
    const dipping = (tag: string): TransferRequest[] => [
      { idemKey: s.key(`${tag}-out`), from: wallet, to: world, amount: 120n, currency: "USD" },
      { idemKey: s.key(`${tag}-in`), from: world, to: wallet, amount: 50n, currency: "USD" },
    ];
    const serial = dipping("serial");
    const refused = await applyTransfers(s.db, pendingOf(serial), { serial: true }).catch((e: unknown) => e);
    assert.ok(ledgerErrors.is(refused, "LEDGER_INSUFFICIENT_FUNDS"), String(refused));
    assert.deepEqual(refused.fields.accountIds, [wallet.toString()]);
    const { rows } = await s.db.query<{ n: bigint }>(
      "SELECT count(*)::int8 AS n FROM transactions WHERE idem_key = ANY($1::text[])",
      [serial.map((r) => r.idemKey)],
    );
    assert.equal(rows[0]!.n, 0n, "the refused call wrote nothing");
    assert.equal((await s.ledger.balance(wallet)).posted, 100n);

    // The credit first: covered at every step, so serial accepts it too.
    const [credit, debit] = dipping("ordered").reverse() as [TransferRequest, TransferRequest];
    const ordered = await applyTransfers(s.db, pendingOf([credit, debit]), { serial: true });
    assert.deepEqual(
      ordered.map((r) => r.replayed),
      [false, false],
    );
    assert.equal((await s.ledger.balance(wallet)).posted, 30n);

    // An atomic batch (no serial), on a wallet funded like the first: only the net effect is checked, as 007 did.
    const second = await fundedWallet(s, 100n);
    const net = await applyTransfers(
      s.db,
      pendingOf([
        { idemKey: s.key("net-out"), from: second.wallet, to: second.world, amount: 120n, currency: "USD" },
        { idemKey: s.key("net-in"), from: second.world, to: second.wallet, amount: 50n, currency: "USD" },
      ]),
    );
    assert.equal(net.length, 2);
    assert.equal((await s.ledger.balance(second.wallet)).posted, 30n);
    await checkLedgerInvariants(s.db);
  });

  it("PY-14 with serial, pending debits count as they come: a hold then a debit beyond what is left is refused", async (s) => {
    const { world, wallet } = await fundedWallet(s, 100n);
    const requests: TransferRequest[] = [
      { idemKey: s.key("hold"), from: wallet, to: world, amount: 70n, currency: "USD", pending: true },
      { idemKey: s.key("spend"), from: wallet, to: world, amount: 40n, currency: "USD" },
      { idemKey: s.key("refill"), from: world, to: wallet, amount: 40n, currency: "USD" },
    ];
    const refused = await applyTransfers(s.db, pendingOf(requests), { serial: true }).catch(
      (e: unknown) => e,
    );
    assert.ok(ledgerErrors.is(refused, "LEDGER_INSUFFICIENT_FUNDS"), String(refused));
    const accepted = await applyTransfers(s.db, pendingOf([requests[0]!, requests[2]!, requests[1]!]), {
      serial: true,
    });
    assert.equal(accepted.length, 3);
    const balance = await s.ledger.balance(wallet);
    assert.equal(balance.available, 100n - 70n + 40n - 40n);
    await checkLedgerInvariants(s.db);
  });

  it("the written transactions equal what the database stores, and a replay answers the stored one", async (s) => {
    const a = await s.ledger.createAccount({ currency: "USD" });
    const b = await s.ledger.createAccount({ currency: "USD" });
    const c = await s.ledger.createAccount({ currency: "USD" });
    const requests: TransferRequest[] = [
      {
        idemKey: s.key("split"),
        entries: [
          { accountId: a.id, currency: "USD", direction: "D", amount: 30n },
          { accountId: c.id, currency: "USD", direction: "C", amount: 10n },
          { accountId: b.id, currency: "USD", direction: "C", amount: 20n },
        ],
        metadata: { order: 7n, nested: { z: 1, a: [1, "x", null] }, note: 'é"\\' },
      },
      { idemKey: s.key("hold"), from: b.id, to: a.id, amount: 5n, currency: "USD", pending: true },
      { idemKey: s.key("plain"), from: c.id, to: a.id, amount: 1n, currency: "USD" },
    ];
    const written = await applyTransfers(s.db, pendingOf(requests), { serial: true });
    const stored = await loadTransactions(
      s.db,
      written.map((r) => r.transaction.id),
    );
    assert.deepEqual(
      written.map((r) => r.transaction),
      stored,
    );
    assert.deepEqual(stored[0]!.metadata, { order: "7", nested: { z: 1, a: [1, "x", null] }, note: 'é"\\' });
    // The same requests again, one of them new: the two replays answer the stored transactions.
    const again = await applyTransfers(
      s.db,
      pendingOf([
        requests[0]!,
        { idemKey: s.key("new"), from: a.id, to: b.id, amount: 2n, currency: "USD" },
        requests[2]!,
      ]),
      { serial: true },
    );
    assert.deepEqual(
      again.map((r) => r.replayed),
      [true, false, true],
    );
    assert.deepEqual(again[0]!.transaction, stored[0]);
    assert.deepEqual(again[2]!.transaction, stored[2]);
    const [fresh] = await loadTransactions(s.db, [again[1]!.transaction.id]);
    assert.deepEqual(again[1]!.transaction, fresh);
    await checkLedgerInvariants(s.db);
  });
});

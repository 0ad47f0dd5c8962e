/**
 * PY-07 as a property, on PGlite and PostgreSQL: after any sequence of transfers, holds,
 * posts, voids, batches and (partial) reversals — including ones the ledger refuses — every
 * currency sums to zero, every materialized balance equals the sum of its entries, no
 * no-overdraft account is below zero, and each run's own accounts sum to zero.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import fc from "fast-check";
import { ledgerErrors } from "../src/errors.ts";
import type { LedgerRepository } from "../src/store/ledger-repository.ts";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";

/** Refusals the ledger is allowed to give for a random operation; anything else fails the property. */
const EXPECTED_REFUSALS = [
  "LEDGER_INSUFFICIENT_FUNDS",
  "LEDGER_REVERSAL_INVALID",
  "LEDGER_TRANSACTION_NOT_PENDING",
];

type Op =
  | { kind: "transfer"; from: number; to: number; amount: number; pending: boolean }
  | { kind: "batch"; legs: { from: number; to: number; amount: number }[] }
  | { kind: "settle"; pick: number; post: boolean }
  | { kind: "reverse"; pick: number; amount: number | null };

const ACCOUNTS = 4; // 0 world (may go negative), 1–3 no-overdraft wallets, all USD
const account = fc.integer({ min: 0, max: ACCOUNTS - 1 });
const leg = fc.record({ from: account, to: account, amount: fc.integer({ min: 1, max: 500 }) });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("transfer" as const),
    from: account,
    to: account,
    amount: fc.integer({ min: 1, max: 500 }),
    pending: fc.boolean(),
  }),
  fc.record({ kind: fc.constant("batch" as const), legs: fc.array(leg, { minLength: 1, maxLength: 4 }) }),
  fc.record({ kind: fc.constant("settle" as const), pick: fc.nat(), post: fc.boolean() }),
  fc.record({
    kind: fc.constant("reverse" as const),
    pick: fc.nat(),
    amount: fc.option(fc.integer({ min: 1, max: 300 })),
  }),
);

async function runOp(s: LedgerSubject, ledger: LedgerRepository, ids: bigint[], done: bigint[], o: Op) {
  const distinct = (from: number, to: number) => ({
    from: ids[from]!,
    to: ids[from === to ? (to + 1) % ACCOUNTS : to]!,
  });
  if (o.kind === "transfer") {
    const { transaction } = await ledger.transfer({
      idemKey: s.key("p"),
      currency: "USD",
      amount: BigInt(o.amount),
      pending: o.pending,
      ...distinct(o.from, o.to),
    });
    done.push(transaction.id);
  } else if (o.kind === "batch") {
    const requests = o.legs.map((l) => ({
      idemKey: s.key("b"),
      currency: "USD",
      amount: BigInt(l.amount),
      ...distinct(l.from, l.to),
    }));
    for (const r of await ledger.transferBatch(requests)) done.push(r.transaction.id);
  } else if (done.length > 0) {
    const id = done[o.pick % done.length]!;
    if (o.kind === "settle") await (o.post ? ledger.post(id) : ledger.void(id));
    else {
      const amount = o.amount === null ? {} : { amount: BigInt(o.amount) };
      const { transaction } = await ledger.reverse(id, { idemKey: s.key("r"), ...amount });
      done.push(transaction.id);
    }
  }
}

contractSuite<LedgerSubject>("ledger property", ledgerBackends, (it) => {
  it("PY-07 after random transfers, holds and reversals every currency sums to 0 and balances equal their entries", async (s) => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const world = await s.ledger.createAccount({ currency: "USD" });
        const wallets = await Promise.all(
          [1, 2, 3].map(() => s.ledger.createAccount({ currency: "USD", noOverdraft: true })),
        );
        const ids = [world.id, ...wallets.map((w) => w.id)];
        const done: bigint[] = [];
        for (const o of ops) {
          try {
            await runOp(s, s.ledger, ids, done, o);
          } catch (err) {
            if (!ledgerErrors.is(err) || !EXPECTED_REFUSALS.includes(err.code)) throw err;
          }
        }
        let total = 0n;
        for (const id of ids) {
          const balance = await s.ledger.balance(id);
          total += balance.posted;
          if (id !== world.id) assert.ok(balance.available >= 0n, `wallet ${id} at ${balance.available}`);
        }
        assert.equal(total, 0n, "this run's accounts only trade among themselves");
        await checkLedgerInvariants(s.db);
      }),
      { seed: 20_261_130, numRuns: 30 },
    );
  });
});

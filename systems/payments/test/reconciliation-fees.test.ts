/**
 * PY-10 fee reconciliation end to end, on PGlite and PostgreSQL, with payments through the real saga
 * and the REAL acquirer simulator's D+1 file (its `fee_minor` column): each matched capture's fee is
 * booked merchant_pending → acquirer_fees exactly once per settlement row (a re-run books nothing
 * new), a file fee that differs from the contracted `feeBps` becomes a `fee_mismatch` exception whose
 * adjustment books the difference, and a fee the merchant cannot cover stays unbooked as an exception
 * without blocking the day.
 */
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { ledgerErrors } from "../src/errors.ts";
import { adjust, feeIdemKey, listExceptions } from "../src/store/reconciliation-repository.ts";
import { reconcileDate } from "../src/workers/reconciler.ts";
import { DAY_MS } from "./acquirer-sim-fixture.ts";
import { balances, paymentBody } from "./payment-fixture.ts";
import { type FullFixture, startFullPayments, testOnEngines } from "./payments-full-fixture.ts";

const CONTRACT_BPS = 150;

/**
 * Captures "today" on both sides (the simulator's manual clock set to the real time our rows are
 * stamped with), `refunds` of some, then the simulator's clock past midnight so the file is out.
 */
async function settledDay(
  t: TestContext,
  url: string | undefined,
  captures: readonly (readonly [string, string])[],
  refunds: readonly (readonly [number, string, string])[] = [],
): Promise<{ f: FullFixture; date: string; clock: ManualClock; keys: string[] }> {
  const f = await startFullPayments(t, { url });
  const now = Date.now();
  f.sim.clock.advance(now - f.sim.clock.nowMs());
  const date = new Date(now).toISOString().slice(0, 10);
  const ids: string[] = [];
  for (const [key, amount] of captures) {
    const res = await f.pay(paymentBody({ amountMinor: amount }), key);
    assert.equal(res.body.status, "captured");
    ids.push(String(res.body.id));
  }
  for (const [index, key, amount] of refunds) {
    const res = await f.call(
      "POST",
      `/v1/payments/${ids[index]}/refunds`,
      { amountMinor: amount },
      { "idempotency-key": key },
    );
    assert.equal(res.body.status, "succeeded", res.text);
  }
  f.sim.clock.advance(Date.parse(`${date}T00:00:00Z`) + DAY_MS - f.sim.clock.nowMs() + 1_000);
  const keys = captures.map(([key]) => `${f.merchant}:${key}`);
  return { f, date, clock: new ManualClock(f.sim.clock.nowMs()), keys };
}

/** The fee transfers booked for `keys`, as key → amount. */
async function feesBooked(db: Database, keys: readonly string[]): Promise<Record<string, bigint>> {
  const { rows } = await db.query<{ idem_key: string; amount: bigint }>(
    `SELECT t.idem_key, e.amount FROM transactions t JOIN entries e ON e.transaction_id = t.id
      WHERE t.idem_key = ANY($1::text[]) AND e.direction = 'D' ORDER BY t.idem_key`,
    [keys.map(feeIdemKey)],
  );
  return Object.fromEntries(rows.map((r) => [r.idem_key.slice("fee:".length), r.amount]));
}

async function feeAccountPosted(db: Database, currency = "BRL"): Promise<bigint> {
  const { rows } = await db.query<{ posted: bigint }>(
    `SELECT (b.posted_credits - b.posted_debits)::int8 AS posted FROM platform_accounts p
       JOIN account_balances b ON b.account_id = p.account_id WHERE p.currency = $1 AND p.role = 'acquirer_fees'`,
    [currency],
  );
  return rows[0]?.posted ?? 0n;
}

async function transactionCount(db: Database): Promise<bigint> {
  const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM transactions");
  return rows[0]!.n;
}

testOnEngines(
  "PY-10 fees: each matched capture's fee is booked once, merchant_pending → acquirer_fees; re-running the file books nothing new",
  async (t, url) => {
    const { f, date, clock, keys } = await settledDay(
      t,
      url,
      [
        ["fee-1", "5000"],
        ["fee-2", "3000"],
        ["fee-3", "333"],
      ],
      [[0, "fee-rf-1", "1000"]],
    );
    const deps = { db: f.db, clock, feeBps: CONTRACT_BPS };
    const first = await reconcileDate(deps, date, { acquirerUrl: f.sim.url });
    assert.equal(first.differences, 0, JSON.stringify(first.byKind));
    assert.deepEqual(await feesBooked(f.db, keys), { [keys[0]!]: 75n, [keys[1]!]: 45n, [keys[2]!]: 5n });
    assert.equal(await feeAccountPosted(f.db), 125n);
    assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, 8333n - 1000n - 125n);
    const before = await transactionCount(f.db);
    const second = await reconcileDate(deps, date, { acquirerUrl: f.sim.url });
    assert.equal(second.newExceptions, 0);
    assert.equal(await transactionCount(f.db), before, "a re-run books nothing new");
    assert.equal(await feeAccountPosted(f.db), 125n);
  },
);

testOnEngines(
  "PY-10 a file fee that differs from the contracted feeBps is a fee_mismatch; its adjustment books the difference once",
  async (t, url) => {
    const { f, date, clock, keys } = await settledDay(t, url, [
      ["fm-1", "5000"],
      ["fm-2", "2000"],
    ]);
    f.sim.sim.faults.update({ feeBps: 200 }); // the acquirer charges 2 % where the contract says 1.5 %
    const deps = { db: f.db, clock, feeBps: CONTRACT_BPS };
    const run = await reconcileDate(deps, date, { acquirerUrl: f.sim.url });
    assert.equal(run.byKind.fee_mismatch, 2);
    assert.equal(run.matched, 2, "the amounts match: only the fee differs");
    const found = (await listExceptions(f.db, { date }))
      .map((e) => `${e.kind} ${e.acquirerKey} ${e.expectedMinor} ${e.actualMinor} ${e.merchantId}`)
      .sort();
    assert.deepEqual(found, [
      `fee_mismatch ${keys[0]} 75 100 ${f.merchant}`,
      `fee_mismatch ${keys[1]} 30 40 ${f.merchant}`,
    ]);
    assert.deepEqual(
      await feesBooked(f.db, keys),
      { [keys[0]!]: 75n, [keys[1]!]: 30n },
      "the contract's fee",
    );
    const pendingBefore = (await balances(f.db, f.merchant)).merchant_pending!.posted;
    const first = (await listExceptions(f.db, { date })).find((e) => e.acquirerKey === keys[0])!;
    const adjusted = await adjust(f.db, first.id, { nowMs: clock.nowMs() });
    assert.equal(adjusted.resolutionAction, "adjust");
    const again = await adjust(f.db, first.id, { nowMs: clock.nowMs() });
    assert.equal(again.adjustmentTransactionId, adjusted.adjustmentTransactionId);
    assert.equal(await feeAccountPosted(f.db), 75n + 30n + 25n);
    assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, pendingBefore - 25n);
    const before = await transactionCount(f.db);
    const rerun = await reconcileDate(deps, date, { acquirerUrl: f.sim.url });
    assert.equal(rerun.newExceptions, 0);
    assert.equal(
      await transactionCount(f.db),
      before,
      "neither the fees nor the adjustment are booked again",
    );
  },
);

testOnEngines(
  "PY-10 a fee the merchant cannot cover stays unbooked as a fee_mismatch with nothing expected; the day still closes",
  async (t, url) => {
    // The whole capture is refunded the same day: merchant_pending (no overdraft) holds 0.
    const { f, date, clock, keys } = await settledDay(
      t,
      url,
      [["broke-1", "1000"]],
      [[0, "broke-rf", "1000"]],
    );
    const deps = { db: f.db, clock, feeBps: CONTRACT_BPS };
    const run = await reconcileDate(deps, date, { acquirerUrl: f.sim.url });
    assert.equal(run.byKind.fee_mismatch, 1);
    const [e] = await listExceptions(f.db, { date });
    assert.equal(e!.expectedMinor, null, "nothing booked");
    assert.equal(e!.actualMinor, 15n);
    assert.deepEqual(await feesBooked(f.db, keys), {});
    assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, 0n);
    const before = await transactionCount(f.db);
    const rerun = await reconcileDate(deps, date, { acquirerUrl: f.sim.url });
    assert.equal(rerun.newExceptions, 0);
    assert.equal(
      await transactionCount(f.db),
      before,
      "the exception owns that fee now: never booked behind it",
    );
    await assert.rejects(adjust(f.db, e!.id, { nowMs: clock.nowMs() }), (error) =>
      ledgerErrors.is(error, "LEDGER_INSUFFICIENT_FUNDS"),
    );
    assert.equal(
      (await listExceptions(f.db, { date }))[0]!.status,
      "open",
      "a refused adjustment writes nothing",
    );
  },
);

/**
 * PY-10 end to end on PGlite: payments and refunds through the real saga and the REAL acquirer
 * simulator over HTTP, differences injected into the day's settlement file at the simulator, the
 * reconciler run for that date: exactly the injected differences become exceptions, a re-run adds
 * none, and `adjust` books NEW ledger transactions while every original row stays as it was.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { engineFree } from "@casebook/lab/test-engines";
import { reconciliationErrors } from "../src/errors.ts";
import { SETTLEMENT_COLUMNS } from "../src/sim/settlement-file.ts";
import { adjust, listExceptions, resolve } from "../src/store/reconciliation-repository.ts";
import { runReconcileCli } from "../src/tools/reconcile.ts";
import { reconcileDate } from "../src/workers/reconciler.ts";
import { DAY_MS } from "./acquirer-sim-fixture.ts";
import { balances, type PaymentsFixture, paymentBody } from "./payment-fixture.ts";
import { startFullPayments } from "./payments-full-fixture.ts";

interface Injected {
  kind: "dropped" | "amount-changed" | "unknown";
  idempotencyKey: string;
  operation: string;
  amountMinor: string;
  originalAmountMinor?: string;
}

/** The contracted fee, which the simulator also charges by default: a clean day has no fee mismatch. */
const FEE_BPS = 150;

/**
 * Three captures and two refunds "today" on both sides: the simulator's manual clock is set to the
 * real time the payments service stamps its rows with, then moved past midnight so the file is out.
 */
async function settledDay(t: TestContext): Promise<{ f: PaymentsFixture; date: string; clock: ManualClock }> {
  const f = await startFullPayments(t);
  const now = Date.now();
  f.sim.clock.advance(now - f.sim.clock.nowMs());
  const date = new Date(now).toISOString().slice(0, 10);
  const ids: string[] = [];
  for (const [key, amount] of [
    ["r-1", "5000"],
    ["r-2", "3000"],
    ["r-3", "2000"],
  ] as const) {
    const res = await f.pay(paymentBody({ amountMinor: amount }), key);
    assert.equal(res.body.status, "captured");
    ids.push(String(res.body.id));
  }
  for (const [id, key, amount] of [
    [ids[0], "rf-1", "1000"],
    [ids[1], "rf-2", "3000"],
  ] as const) {
    const res = await f.call(
      "POST",
      `/v1/payments/${id}/refunds`,
      { amountMinor: amount },
      { "idempotency-key": key },
    );
    assert.equal(res.body.status, "succeeded");
  }
  f.sim.clock.advance(Date.UTC(...ymd(date)) + DAY_MS - f.sim.clock.nowMs() + 1_000);
  return { f, date, clock: new ManualClock(f.sim.clock.nowMs()) };
}

function ymd(date: string): [number, number, number] {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  return [y, m - 1, d];
}

async function inject(f: PaymentsFixture, date: string): Promise<Injected[]> {
  const res = await f.sim.call("PUT", `/admin/settlements/${date}/differences`, {
    dropRows: 1,
    changeAmounts: 1,
    unknownRows: 1,
  });
  assert.equal(res.status, 200, res.text);
  const listed = await f.sim.call("GET", `/admin/settlements/${date}/differences`);
  return listed.body.differences as Injected[];
}

const KIND_OF = {
  dropped: "missing_at_acquirer",
  "amount-changed": "amount_mismatch",
  unknown: "missing_in_ledger",
};

function expectedExceptions(injected: readonly Injected[]): string[] {
  return injected
    .map((d) => {
      const expected = d.kind === "dropped" ? d.amountMinor : (d.originalAmountMinor ?? null);
      const actual = d.kind === "dropped" ? null : d.amountMinor;
      return `${KIND_OF[d.kind]} ${d.operation} ${d.idempotencyKey} ${expected} ${actual}`;
    })
    .sort();
}

async function recordedExceptions(db: Database, date: string): Promise<string[]> {
  return (await listExceptions(db, { date }))
    .map((e) => `${e.kind} ${e.operation} ${e.acquirerKey} ${e.expectedMinor} ${e.actualMinor}`)
    .sort();
}

test("PY-10 reconciliation reports exactly the differences the simulator injected; a re-run adds none", async (t) => {
  if (engineFree(t)) return;
  const { f, date, clock } = await settledDay(t);
  const injected = await inject(f, date);
  assert.equal(injected.length, 3);
  const first = await reconcileDate({ db: f.db, clock, feeBps: FEE_BPS }, date, { acquirerUrl: f.sim.url });
  assert.deepEqual(first.byKind, {
    missing_in_ledger: 1,
    missing_at_acquirer: 1,
    amount_mismatch: 1,
    fee_mismatch: 0,
  });
  assert.equal(first.fileRows, 5); // 5 true rows − 1 dropped + 1 unknown
  assert.equal(first.matched, 3);
  assert.equal(first.newExceptions, 3);
  assert.deepEqual(await recordedExceptions(f.db, date), expectedExceptions(injected));
  const second = await reconcileDate({ db: f.db, clock, feeBps: FEE_BPS }, date, { acquirerUrl: f.sim.url });
  assert.equal(second.differences, 3);
  assert.equal(second.newExceptions, 0);
  assert.equal((await listExceptions(f.db, { date })).length, 3);
});

test("PY-10 a clean day has no exceptions", async (t) => {
  if (engineFree(t)) return;
  const { f, date, clock } = await settledDay(t);
  const summary = await reconcileDate({ db: f.db, clock, feeBps: FEE_BPS }, date, { acquirerUrl: f.sim.url });
  assert.deepEqual(
    { matched: summary.matched, differences: summary.differences },
    { matched: 5, differences: 0 },
  );
});

async function ledgerRows(db: Database) {
  const { rows: transactions } = await db.query("SELECT * FROM transactions ORDER BY id");
  const { rows: entries } = await db.query("SELECT * FROM entries ORDER BY id");
  return { transactions, entries };
}

test("PY-10 adjustments are new ledger entries, never edits; unknown keys are left to a person", async (t) => {
  if (engineFree(t)) return;
  const { f, date, clock } = await settledDay(t);
  await inject(f, date);
  await reconcileDate({ db: f.db, clock, feeBps: FEE_BPS }, date, { acquirerUrl: f.sim.url });
  const before = await ledgerRows(f.db);
  const pendingBefore = (await balances(f.db, f.merchant)).merchant_pending!.posted;
  const open = await listExceptions(f.db, { status: "open" });
  let expectedPending = pendingBefore;
  const adjusted: bigint[] = [];
  for (const e of open) {
    if (e.kind === "missing_in_ledger") {
      await assert.rejects(adjust(f.db, e.id, { nowMs: clock.nowMs() }), (error) =>
        reconciliationErrors.is(error, "PAYMENTS_RECON_UNKNOWN_KEY"),
      );
      const closed = await resolve(f.db, e.id, {
        nowMs: clock.nowMs(),
        note: "not ours: acquirer asked to remove",
      });
      assert.equal(closed.status, "resolved");
      assert.equal(closed.adjustmentTransactionId, null);
      continue;
    }
    const done = await adjust(f.db, e.id, { nowMs: clock.nowMs() });
    assert.equal(done.status, "resolved");
    assert.notEqual(done.adjustmentTransactionId, null);
    adjusted.push(done.adjustmentTransactionId!);
    const again = await adjust(f.db, e.id, { nowMs: clock.nowMs() });
    assert.equal(again.adjustmentTransactionId, done.adjustmentTransactionId, "adjusting twice books once");
    const delta = (e.actualMinor ?? 0n) - (e.expectedMinor ?? 0n);
    expectedPending += e.operation === "capture" ? delta : -delta;
  }
  const after = await ledgerRows(f.db);
  assert.deepEqual(
    after.transactions.slice(0, before.transactions.length),
    before.transactions,
    "originals untouched",
  );
  assert.deepEqual(
    after.entries.slice(0, before.entries.length),
    before.entries,
    "original entries untouched",
  );
  const added = after.transactions.slice(before.transactions.length) as {
    id: bigint;
    idem_key: string;
    status: string;
  }[];
  assert.deepEqual(
    added.map((tx) => tx.id),
    adjusted,
  );
  for (const tx of added) {
    assert.match(tx.idem_key, /^recon:\d+$/);
    assert.equal(tx.status, "posted");
  }
  assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, expectedPending);
  assert.equal((await listExceptions(f.db, { status: "open" })).length, 0);
});

test("PY-10 the CLI prints usage and refuses a call without a file or date", async (t) => {
  if (engineFree(t)) return;
  const out: string[] = [];
  assert.equal(await runReconcileCli(["--help"], {}, (s) => out.push(s)), 0);
  assert.match(out[0]!, /usage: casebook payments reconcile/);
  assert.equal(await runReconcileCli([], {}, (s) => out.push(s)), 2);
  assert.equal(await runReconcileCli(["--date", "2026-10-22"], {}, (s) => out.push(s)), 2);
  assert.match(out.at(-1)!, /ACQUIRER_URL/);
});

test("PY-10 the CLI says in one line when it cannot open the database (the service holds the embedded one), exit 1", async (t) => {
  if (engineFree(t)) return;
  const dataDir = await mkdtemp(join(tmpdir(), "reconcile-cli-"));
  const env = { CASEBOOK_DATA: dataDir };
  const service = await openDatabase({ system: "payments", env }); // what a running service holds
  const file = join(dataDir, "settlement-2026-10-22.csv");
  await writeFile(file, `${SETTLEMENT_COLUMNS.join(",")}\n`);
  const out: string[] = [];
  try {
    assert.equal(await runReconcileCli([file], env, (s) => out.push(s)), 1);
    assert.equal(out.length, 1);
    assert.match(out[0]!, /^reconciliation failed: cannot open the database: Another live process holds/);
  } finally {
    await service.close();
    await rm(dataDir, { recursive: true, force: true });
  }
});

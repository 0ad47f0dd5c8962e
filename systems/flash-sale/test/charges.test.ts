/**
 * The charge queue's drain (workers/charge-worker.ts) on PGlite + the in-process stock and on
 * PostgreSQL + Redis, with a scripted charger standing in for payments: approved → the order;
 * declined → the tickets back; pending → charged again later under the SAME key; approved +
 * order refused → one refund (FS-18's saga); and the processor never sees more than the rate
 * in any second (FS-15).
 */
import assert from "node:assert/strict";
import { systemClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { ChargeResult, Charger } from "../src/domain/charger.ts";
import { auditSale, getHold, startCharge } from "../src/store/sale-repository.ts";
import { ChargeWorker } from "../src/workers/charge-worker.ts";
import { embeddedFlash, type Flash, occupyNumber, realFlash } from "./flash-backends.ts";

class ScriptedCharger implements Charger {
  readonly calls: string[] = [];
  readonly refunds: string[] = [];
  readonly arrivalsMs: number[] = [];
  readonly answer: (key: string, nth: number) => ChargeResult;
  constructor(answer: (key: string, nth: number) => ChargeResult) {
    this.answer = answer;
  }
  async charge(input: { idempotencyKey: string }): Promise<ChargeResult> {
    this.arrivalsMs.push(performance.now());
    this.calls.push(input.idempotencyKey);
    return this.answer(input.idempotencyKey, this.calls.filter((k) => k === input.idempotencyKey).length);
  }
  async refund(input: { idempotencyKey: string }): Promise<void> {
    this.refunds.push(input.idempotencyKey);
  }
}

function worker(f: Flash, charger: Charger, ratePerS = 1_000, maxInFlight = 1) {
  // The sale's clock decides what is due; real time paces the rate.
  const clock = { nowMs: () => f.clock.nowMs(), monotonicMs: () => systemClock.monotonicMs() };
  return new ChargeWorker({
    db: f.db,
    stock: f.stock,
    charger,
    clock,
    ratePerS,
    maxBatch: 100,
    maxInFlight,
    leaseMs: 30_000,
    idleMs: 50,
    retryBaseMs: 1,
    retryCapMs: 1,
  });
}

async function paying(f: Flash, saleId: string, buyer: string) {
  const r = await f.checkout.reserve({ saleId, buyer, quantity: 1, holdTtlMs: 600_000 });
  assert.equal(r.kind, "held");
  const holdId = (r as { holdId: string }).holdId;
  assert.equal((await startCharge(f.db, { holdId, nowMs: f.clock.nowMs() })).won, true);
  return holdId;
}

async function drain(w: ChargeWorker, f: Flash) {
  for (let i = 0; i < 50; i++) {
    const r = await w.runOnce();
    const { rows } = await f.db.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM charges WHERE step <> 'done'",
    );
    if (rows[0]!.n === 0) return;
    if (r.claimed === 0) await f.passMs(5);
  }
  throw new Error("the charge queue did not drain");
}

contractSuite<Flash>("charges", [embeddedFlash, realFlash], (it) => {
  it("FS-18 approved → order written and the hold settled; declined → released and its ticket back; pending → charged again under the same key", async (f) => {
    const sale = await f.sale(3);
    const [ok, no, slow] = [
      await paying(f, sale.id, "ok"),
      await paying(f, sale.id, "no"),
      await paying(f, sale.id, "slow"),
    ];
    const charger = new ScriptedCharger((key, nth) => {
      if (key === no) return { kind: "declined", paymentId: "pay_no", reason: "declined" };
      if (key === slow && nth < 3) return { kind: "pending", paymentId: undefined };
      return { kind: "approved", paymentId: `pay_${key}` };
    });
    await drain(worker(f, charger), f);
    assert.deepEqual(
      [(await getHold(f.db, ok))?.state, (await getHold(f.db, slow))?.state],
      ["paid", "paid"],
    );
    assert.deepEqual(
      [(await getHold(f.db, no))?.state, (await getHold(f.db, no))?.releaseReason],
      ["released", "declined"],
    );
    assert.equal(
      charger.calls.filter((k) => k === slow).length,
      3,
      "the slow one was asked three times, always with its hold id",
    );
    assert.deepEqual(new Set(charger.calls), new Set([ok, no, slow]), "the key is the hold id");
    const audit = await auditSale(f.db, sale.id);
    assert.deepEqual([audit.orders, audit.leaked, audit.duplicateNumbers], [2, 0, 0]);
    assert.deepEqual(await f.stock.view(sale.id), { available: 1, epoch: 1, holds: 0 });
  });

  it("FS-18 approved but the order write refused (FS-10) → one refund, the hold compensated, its ticket back", async (f) => {
    const sale = await f.sale(2);
    const holdId = await paying(f, sale.id, "victim");
    const number = (await getHold(f.db, holdId))!.numbers[0]!;
    await occupyNumber(f.db, sale.id, number);
    const charger = new ScriptedCharger(() => ({ kind: "approved", paymentId: "pay_victim" }));
    await drain(worker(f, charger), f);
    assert.deepEqual(
      charger.refunds,
      [`refund:${holdId}`],
      "refunded once, under a key derived from the hold",
    );
    assert.deepEqual(
      [(await getHold(f.db, holdId))?.state, (await getHold(f.db, holdId))?.releaseReason],
      ["released", "compensated"],
    );
    const { rows } = await f.db.query<{ outcome: string }>("SELECT outcome FROM charges WHERE hold_id = $1", [
      holdId,
    ]);
    assert.equal(rows[0]!.outcome, "compensated");
  });

  it("FS-15 the processor never receives more than the configured rate in any second", async (f) => {
    const sale = await f.sale(12);
    for (let i = 0; i < 12; i++) await paying(f, sale.id, `r${i}`);
    const charger = new ScriptedCharger((key) => ({ kind: "approved", paymentId: `pay_${key}` }));
    const ratePerS = 5;
    await drain(worker(f, charger, ratePerS), f);
    const t = charger.arrivalsMs;
    assert.equal(t.length, 12);
    for (let i = 0; i < t.length; i++) {
      const inWindow = t.filter((x) => x >= t[i]! && x < t[i]! + 1_000).length;
      assert.ok(inWindow <= ratePerS, `${inWindow} charges in the second from arrival ${i}`);
    }
    assert.equal((await auditSale(f.db, sale.id)).orders, 12);
  });

  it("FS-15 with several charges in flight and latencies that vary, the processor still gets at most the rate in any second", async (f) => {
    const sale = await f.sale(16);
    for (let i = 0; i < 16; i++) await paying(f, sale.id, `v${i}`);
    // Each call lands at the processor part way through it, after a delay that varies from
    // 0 to 600 ms: sends spaced 1/rate apart would land bunched; the window's permits do not.
    const landedMs: number[] = [];
    const delays = [600, 0, 450, 50, 300, 0, 600, 100, 0, 500, 250, 0, 600, 0, 350, 0];
    let n = 0;
    const charger: Charger = {
      charge: async (input) => {
        const d = delays[n++ % delays.length]!;
        await new Promise((r) => setTimeout(r, d));
        landedMs.push(performance.now());
        await new Promise((r) => setTimeout(r, 600 - d));
        return { kind: "approved", paymentId: `pay_${input.idempotencyKey}` };
      },
      refund: async () => {},
    };
    const ratePerS = 4;
    await drain(worker(f, charger, ratePerS, 4), f);
    assert.equal(landedMs.length, 16);
    for (const start of landedMs) {
      const inWindow = landedMs.filter((x) => x >= start && x < start + 1_000).length;
      assert.ok(inWindow <= ratePerS, `${inWindow} charges landed in the second from ${start}`);
    }
    assert.equal((await auditSale(f.db, sale.id)).orders, 16);
  });
});

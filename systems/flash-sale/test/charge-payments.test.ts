/**
 * FS-01 FS-18 charging through the payments system itself — not a stand-in: its service started
 * as its own process through its real entry (PGlite, its in-process acquirer simulator; this
 * system never imports its code), a merchant and key made through its admin API. Five holds are
 * charged by the charge worker over HTTP; each becomes one order whose payment payments reports
 * captured, for the sale's price, under the hold id as its Idempotency-Key — asked again with
 * that key, payments answers the same payment and charges nothing more.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import { startServerProcess } from "@casebook/lab/server-process";
import { engineFree } from "@casebook/lab/test-engines";
import { PaymentsCharger } from "../src/clients/payments-charger.ts";
import { auditSale, startCharge } from "../src/store/sale-repository.ts";
import { ChargeWorker } from "../src/workers/charge-worker.ts";
import { embeddedFlash } from "./flash-backends.ts";

const paymentsEntry = new URL("../../payments/src/main.ts", import.meta.url);
const ADMIN = "payments-admin-token-for-flash-0";
const BUYERS = 5;

test("FS-01 FS-18 charged through the payments service itself: one captured payment per hold for the sale's price, keyed by the hold; a repeat answers the same payment", async (t) => {
  if (engineFree(t)) return;
  const dir = await mkdtemp(join(tmpdir(), "casebook-flash-payments-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const payments = await startServerProcess({
    name: "payments",
    entry: paymentsEntry,
    env: {
      CASEBOOK_DATA: dir,
      DATABASE_URL: "",
      ACQUIRER_URL: "",
      PAYMENTS_ADMIN_TOKEN: ADMIN,
      PAYMENTS_BOOTSTRAP_MERCHANT: "off",
      LOG_LEVEL: "warn",
    },
    readyTimeoutMs: 90_000,
  });
  t.after(() => payments.stop());
  const merchant = await fetch(`${payments.url}/v1/admin/merchants`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "flash", name: "Flash sale" }),
  });
  assert.equal(merchant.status, 201, await merchant.clone().text());
  const { apiKey } = (await merchant.json()) as { apiKey: { key: string } };

  const opened = await embeddedFlash.open(t);
  const f = opened!.subject;
  const charger = new PaymentsCharger({
    url: payments.url,
    apiKey: apiKey.key,
    cardToken: "tok_visa",
    timeoutMs: 10_000,
  });
  t.after(async () => {
    charger.close();
    await opened!.close();
  });
  const worker = new ChargeWorker({
    db: f.db,
    stock: f.stock,
    charger,
    clock: { nowMs: () => f.clock.nowMs(), monotonicMs: () => systemClock.monotonicMs() },
    ratePerS: 1_000,
    maxBatch: 100,
    leaseMs: 30_000,
    idleMs: 20,
    retryBaseMs: 100,
    retryCapMs: 400,
  });
  const sale = await f.sale(BUYERS + 2, { holdTtlMs: 60_000 });
  const holds: string[] = [];
  for (let i = 0; i < BUYERS; i++) {
    const r = await f.checkout.reserve({ saleId: sale.id, buyer: `b${i}`, quantity: 1, holdTtlMs: 60_000 });
    assert.equal(r.kind, "held");
    const holdId = (r as { holdId: string }).holdId;
    assert.equal((await startCharge(f.db, { holdId, nowMs: f.clock.nowMs() })).won, true);
    holds.push(holdId);
  }
  // A saga may answer 202 (pending): the worker asks again under the same key.
  for (let round = 0; round < 50 && (await auditSale(f.db, sale.id)).orders < BUYERS; round++) {
    await worker.runOnce();
    await f.passMs(401);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const audit = await auditSale(f.db, sale.id);
  assert.deepEqual(
    [audit.orders, audit.soldTickets, audit.duplicateNumbers, audit.leaked],
    [BUYERS, BUYERS, 0, 0],
  );

  const { rows } = await f.db.query<{ hold_id: string; payment_id: string; amount_minor: bigint }>(
    "SELECT hold_id, payment_id, amount_minor FROM orders WHERE sale_id = $1",
    [sale.id],
  );
  const auth = { authorization: `Bearer ${apiKey.key}` };
  for (const order of rows) {
    const res = await fetch(`${payments.url}/v1/payments/${order.payment_id}`, { headers: auth });
    assert.equal(res.status, 200);
    const payment = (await res.json()) as { status: string; amountMinor: string; capturedMinor: string };
    assert.equal(payment.status, "captured");
    assert.equal(BigInt(payment.capturedMinor), order.amount_minor);
  }
  // FS-18: the hold id is the Idempotency-Key: asking again is the same payment, nothing new charged.
  const first = rows[0]!;
  const again = await charger.charge({
    idempotencyKey: first.hold_id,
    amountMinor: first.amount_minor,
    currency: "USD",
  });
  assert.equal(again.kind, "approved");
  assert.equal((again as { paymentId: string }).paymentId, first.payment_id);
  assert.deepEqual(new Set(rows.map((r) => r.hold_id)), new Set(holds));
});

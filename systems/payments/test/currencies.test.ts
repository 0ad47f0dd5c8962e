/**
 * Currencies at payments' edges are active ISO 4217 codes with a minor unit (kit's iso-4217
 * table): XYZ and XAU are a 400 naming `/body/currency` with nothing stored, at the payments API
 * and at the acquirer simulator; a settlement row in XYZ is a malformed row; JPY (exponent 0)
 * and BHD (exponent 3) pay, capture and refund in integer minor units — nothing rescales them.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { minorUnitExponent } from "@casebook/kit/iso-4217";
import { engineFree } from "@casebook/lab/test-engines";
import { parseSettlementCsv, SETTLEMENT_COLUMNS } from "../src/sim/settlement-file.ts";
import { balances, paymentBody } from "./payment-fixture.ts";
import { startFullPayments as startPayments } from "./payments-full-fixture.ts";

test("POST /v1/payments with XYZ, XAU or usd → 400 naming /body/currency; nothing stored", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  for (const [currency, message] of [
    ["XYZ", /not an ISO 4217 currency code/],
    ["XAU", /has no minor unit/],
    ["usd", /three capital letters/],
  ] as const) {
    const bad = await f.pay(paymentBody({ currency }), `cur-${currency}`);
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body.code, "PAYMENTS_PAYMENT_INVALID");
    const errors = bad.body.errors as { field: string; message: string }[];
    assert.deepEqual(
      errors.map((e) => e.field),
      ["/body/currency"],
    );
    assert.match(errors[0]!.message, message);
    assert.equal(await f.idempotency.find(f.merchant, `cur-${currency}`), undefined);
  }
  const { rows } = await f.db.query<{ n: bigint }>("SELECT count(*) AS n FROM accounts");
  assert.equal(rows[0]!.n, 0n, "no account opened for a refused currency");
  assert.equal(f.sim.sim.state.stats().authorizationAttempts, 0);
});

test("JPY (0 decimals) and BHD (3 decimals) pay, capture and refund in integer minor units", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  assert.equal(minorUnitExponent("JPY"), 0);
  assert.equal(minorUnitExponent("BHD"), 3);
  // ¥1250 is 1250 minor units; BD 1.250 is 1250 minor units: the same integers, never rescaled.
  for (const currency of ["JPY", "BHD"]) {
    const paid = await f.pay(paymentBody({ currency, amountMinor: "1250" }), `cur-ok-${currency}`);
    assert.equal(paid.status, 201, paid.text);
    assert.equal(paid.body.status, "captured");
    assert.equal(paid.body.currency, currency);
    assert.equal(paid.body.capturedMinor, "1250");
    const refund = await f.call(
      "POST",
      `/v1/payments/${paid.body.id}/refunds`,
      { amountMinor: "250" },
      { "idempotency-key": `cur-rf-${currency}` },
    );
    assert.equal(refund.status, 201, refund.text);
    assert.equal((await balances(f.db, f.merchant, currency)).merchant_pending!.posted, 1000n);
    const auth = f.sim.sim.state.getByKey(`${f.merchant}:cur-ok-${currency}`);
    assert.equal(auth.currency, currency);
    assert.equal(auth.amountMinor, 1250n);
  }
});

test("a settlement row in a currency that is not ISO 4217 is a malformed row", (t) => {
  if (engineFree(t)) return;
  const row = (currency: string) =>
    `${SETTLEMENT_COLUMNS.join(",")}\nk1,auth_1,capture,1250,${currency},19,2026-10-22T10:00:00.000Z\n`;
  assert.equal(parseSettlementCsv(row("JPY"))[0]!.currency, "JPY");
  assert.throws(() => parseSettlementCsv(row("XYZ")), /malformed row on line 2/);
  assert.throws(() => parseSettlementCsv(row("XAU")), /malformed row on line 2/);
});

/**
 * PY-15 "never beyond what was captured", raced on PostgreSQL: refunds of one payment sent at once
 * over several pooled connections, each for more than half the capture. The payment row is locked
 * (`lockPayment`: SELECT … FOR UPDATE) before its refundable amount is read, so exactly one refund
 * per payment succeeds and every other is a clean 422 naming the refundable amount — never a 5xx
 * from the CHECK (refunded ≤ captured) that a lost race would hit — and the acquirer sees one
 * refund per payment.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { requirePostgres } from "@casebook/lab/test-engines";
import { paymentBody } from "./payment-fixture.ts";
import { startFullPayments } from "./payments-full-fixture.ts";

test("PY-15 concurrent refunds of one payment on PostgreSQL: one succeeds, the others 422, never beyond the capture", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const f = await startFullPayments(t, { url });
  const payments = 5;
  const racers = 8;
  const statuses: number[] = [];
  for (let p = 0; p < payments; p++) {
    const paid = await f.pay(paymentBody({ amountMinor: "5000" }), `race-pay-${p}`);
    assert.equal(paid.body.status, "captured", paid.text);
    const replies = await Promise.all(
      Array.from({ length: racers }, (_, r) =>
        f.call(
          "POST",
          `/v1/payments/${paid.body.id}/refunds`,
          { amountMinor: "2600" },
          {
            "idempotency-key": `race-refund-${p}-${r}`,
          },
        ),
      ),
    );
    statuses.push(...replies.map((reply) => reply.status));
    const won = replies.filter((reply) => reply.status === 201);
    assert.equal(won.length, 1, replies.map((reply) => `${reply.status} ${reply.text}`).join("\n"));
    for (const reply of replies.filter((r) => r.status !== 201)) {
      assert.equal(reply.status, 422, reply.text);
      assert.equal(reply.body.code, "PAYMENTS_REFUND_EXCEEDS_CAPTURED");
    }
  }
  const { rows } = await f.db.query<{ refunded_minor: bigint; captured_minor: bigint }>(
    "SELECT refunded_minor, captured_minor FROM payments WHERE merchant_id = $1",
    [f.merchant],
  );
  assert.equal(rows.length, payments);
  for (const row of rows) assert.equal(row.refunded_minor, 2600n);
  assert.equal(f.sim.sim.state.stats().refunds, payments, "one acquirer refund per payment");
  t.diagnostic(`statuses: ${statuses.join(" ")}`);
});

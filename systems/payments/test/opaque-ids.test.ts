/**
 * The API's payment and refund ids are opaque (migrations/013_opaque_ids.sql, domain/public-ids.ts):
 * merchant B's first payment id says nothing about how many payments merchant A made, the
 * internal sequence never resolves through the API, and events carry the public id. Migration 013
 * upgrades a data directory made by the migrations before it: a payment and a refund written by
 * the previous version answer at their old decimal ids, and new payments get opaque ones.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { applyMigrations, readMigrations, runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Queryable } from "@casebook/infra/sql/sql";
import { tableShape } from "@casebook/lab/table-shape";
import { engineFree } from "@casebook/lab/test-engines";
import { normalizeTransfer } from "../src/domain/ledger.ts";
import { isPaymentId, isRefundId } from "../src/domain/public-ids.ts";
import { outboxEventSink } from "../src/store/payment-events.ts";
import {
  acquirerKeyOf,
  type CreatePaymentInput,
  ensureMerchantAccounts,
  findPaymentByPublicId,
  type Payment,
  type PaymentRow,
  toPayment,
} from "../src/store/payment-repository.ts";
import { createRefund, findRefund } from "../src/store/refund-repository.ts";
import { bookHoldWith007 } from "./ledger-write-007.ts";
import { MIGRATIONS_DIR, paymentBody } from "./payment-fixture.ts";
import { startFullPayments } from "./payments-full-fixture.ts";

const PAYMENT_ID = /^pay_[0-9a-f]{32}$/;
const REFUND_ID = /^re_[0-9a-f]{32}$/;
/** The migrations a data directory of the previous version has: everything before 013. */
const MAX_OLD = 12;

test("ids are opaque: merchant B's first payment id says nothing of merchant A's count, and internal ids never resolve", async (t) => {
  if (engineFree(t)) return;
  const f = await startFullPayments(t, { orchestrator: { events: outboxEventSink } });
  const merchantB = `${f.merchant}-b`;
  const aIds: string[] = [];
  for (const key of ["a-1", "a-2", "a-3"]) {
    const paid = await f.pay(paymentBody(), key);
    assert.equal(paid.status, 201, paid.text);
    aIds.push(String(paid.body.id));
  }
  const bFirst = await f.pay(paymentBody(), "b-1", merchantB);
  assert.equal(bFirst.status, 201, bFirst.text);
  const bId = String(bFirst.body.id);

  const all = [...aIds, bId];
  for (const id of all) assert.match(id, PAYMENT_ID, "a random id, no number in it");
  assert.equal(new Set(all).size, all.length, "unique");
  // Internally the one sequence still counts everyone's payments: B's is the fourth.
  const { rows } = await f.db.query<{ id: bigint; public_id: string }>(
    "SELECT id, public_id FROM payments ORDER BY id",
  );
  assert.deepEqual(
    rows.map((r) => r.public_id),
    all,
  );
  assert.equal(rows[3]!.id - rows[0]!.id, 3n);
  // …and that number leads nowhere: not for its merchant, not for anyone.
  for (const r of rows) {
    const byInternal = await f.call("GET", `/v1/payments/${r.id}`, undefined, {
      "x-test-merchant": merchantB,
    });
    assert.equal(byInternal.status, 404, `internal id ${r.id}`);
  }
  const own = await f.call("GET", `/v1/payments/${bId}`, undefined, { "x-test-merchant": merchantB });
  assert.equal(own.status, 200, own.text);
  assert.equal(own.body.id, bId);
  const cross = await f.call("GET", `/v1/payments/${bId}`);
  assert.equal(cross.status, 404, "merchant A does not see B's payment");
  const malformed = await f.call("GET", "/v1/payments/pay_NOT-HEX");
  assert.equal(malformed.status, 404);
  assert.equal(malformed.body.code, "PAYMENTS_PAYMENT_NOT_FOUND");

  // Replays and the events sent to webhooks speak the public id.
  const again = await f.pay(paymentBody(), "a-1");
  assert.equal(again.body.id, aIds[0], "a replay keeps its id");
  const { rows: events } = await f.db.query<{ payload: { id: string; paymentId: string } }>(
    "SELECT payload FROM outbox_events ORDER BY created_at, seq",
  );
  assert.deepEqual(
    events.map((e) => e.payload.paymentId),
    all,
  );
  for (const e of events) assert.equal(e.payload.id, e.payload.paymentId);

  // Refunds: `re_…`, found by it under its payment, and naming the payment by its public id.
  const refunded = await f.call(
    "POST",
    `/v1/payments/${aIds[0]}/refunds`,
    { amountMinor: "1000" },
    { "idempotency-key": "rf-1" },
  );
  assert.equal(refunded.status, 201, refunded.text);
  const refundId = String(refunded.body.id);
  assert.match(refundId, REFUND_ID);
  assert.equal(refunded.body.paymentId, aIds[0]);
  const got = await f.call("GET", `/v1/payments/${aIds[0]}/refunds/${refundId}`);
  assert.equal(got.status, 200, got.text);
  assert.equal(got.body.id, refundId);
  assert.equal((await f.call("GET", `/v1/payments/${aIds[1]}/refunds/${refundId}`)).status, 404);
  const { rows: refunds } = await f.db.query<{ id: bigint }>("SELECT id FROM payment_refunds");
  assert.equal((await f.call("GET", `/v1/payments/${aIds[0]}/refunds/${refunds[0]!.id}`)).status, 404);
});

test("public id shapes: new, pre-013 decimal, and nothing else", (t) => {
  if (engineFree(t)) return;
  assert.ok(isPaymentId(`pay_${"a1".repeat(16)}`));
  assert.ok(isPaymentId("7"));
  assert.ok(isPaymentId("9223372036854775807"));
  assert.ok(!isPaymentId("07"));
  assert.ok(!isPaymentId("12345678901234567890"), "20 digits: no int8 id ever had it");
  assert.ok(!isPaymentId(`re_${"a1".repeat(16)}`));
  assert.ok(!isPaymentId(`pay_${"A1".repeat(16)}`), "lowercase hex only");
  assert.ok(!isPaymentId(`pay_${"a1".repeat(15)}`));
  assert.ok(isRefundId(`re_${"0f".repeat(16)}`));
  assert.ok(isRefundId("3"));
  assert.ok(!isRefundId(`pay_${"0f".repeat(16)}`));
});

/**
 * What the version before 013 wrote for a new payment: its reserve hold, through that schema's
 * ledger_write (007's; today's createPayment calls 018's), then the payment row by that version's
 * INSERT (today's returns its columns by name, `public_id` among them, which 013 adds).
 */
async function createPaymentBefore013(tx: Queryable, input: CreatePaymentInput): Promise<Payment> {
  const accounts = await ensureMerchantAccounts(tx, input.merchantId, input.currency);
  const hold = await bookHoldWith007(
    tx,
    normalizeTransfer({
      idemKey: `pay:old:${input.idempotencyKey}:reserve`,
      from: accounts.customerFunds,
      to: accounts.merchantPending,
      amount: input.amountMinor,
      currency: input.currency,
      pending: true,
    }),
  );
  const { rows } = await tx.query<PaymentRow>(
    `INSERT INTO payments (merchant_id, idempotency_key, acquirer_key, amount_minor, currency, card_token,
       capture, status, step, intent, next_attempt_at, lease_owner, lease_expires_at, idem_generation,
       hold_transaction_id, started_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', 'authorize', 'authorize', $8, NULL, NULL, $9, $10, $8, $8, $8)
     RETURNING *`,
    [
      input.merchantId,
      input.idempotencyKey,
      acquirerKeyOf(input.merchantId, input.idempotencyKey),
      input.amountMinor,
      input.currency,
      input.cardToken,
      input.capture,
      new Date(input.nowMs),
      input.idemGeneration,
      hold,
    ],
  );
  return toPayment(rows[0]!);
}

test("013 upgrades a data directory of the previous version: old ids still answer, new payments get opaque ids", async (t) => {
  if (engineFree(t)) return;
  const root = await mkdtemp(join(tmpdir(), "casebook-payments-opaque-"));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dataDir = join(root, "payments");
  const merchant = "mer_old";
  const old = await openDatabase({ system: "payments", dataDir });
  let oldPaymentId: bigint;
  let oldRefundId: bigint;
  try {
    const files = (await readMigrations(MIGRATIONS_DIR)).filter((m) => m.version <= MAX_OLD);
    assert.ok(!files.some((m) => m.name === "013_opaque_ids"));
    await applyMigrations(old, files);
    assert.equal(
      (await tableShape(old, "payments")).columns.some((c) => c.startsWith("public_id")),
      false,
    );
    // A captured payment and one refund of it, written by the INSERTs the previous version runs.
    const nowMs = Date.UTC(2026, 0, 1);
    await old.transaction(async (tx) => {
      const payment = await createPaymentBefore013(tx, {
        merchantId: merchant,
        idempotencyKey: "old-1",
        amountMinor: 5000n,
        currency: "BRL",
        cardToken: "tok_visa_4242",
        capture: true,
        idemGeneration: 1,
        nowMs,
      });
      await tx.query(
        "UPDATE payments SET status = 'captured', step = 'done', captured_minor = 5000 WHERE id = $1",
        [payment.id],
      );
      const refund = await createRefund(
        tx,
        { ...payment, status: "captured", step: "done", capturedMinor: 5000n },
        {
          idempotencyKey: "old-rf",
          amountMinor: 1000n,
          idemGeneration: 1,
          nowMs,
          leaseOwner: "old",
          leaseMs: 1_000,
          retryAfterMs: 0,
        },
      );
      oldPaymentId = payment.id;
      oldRefundId = refund.id;
    });
  } finally {
    await old.close();
  }

  const db = await openDatabase({ system: "payments", dataDir });
  t.after(() => db.close());
  const report = await runMigrations(db, { dir: MIGRATIONS_DIR });
  // 013 first, then every later migration (since 015 the ledger's group commit), none before it.
  const later = (await readMigrations(MIGRATIONS_DIR)).filter((m) => m.version > MAX_OLD).map((m) => m.name);
  assert.equal(later[0], "013_opaque_ids");
  assert.deepEqual(report.applied, later);
  const fresh = await openDatabase({ system: "payments", dataDir: "memory://", env: {} });
  t.after(() => fresh.close());
  await runMigrations(fresh, { dir: MIGRATIONS_DIR });
  for (const table of ["payments", "payment_refunds"])
    assert.deepEqual(
      await tableShape(db, table),
      await tableShape(fresh, table),
      `${table}: upgraded = fresh`,
    );

  const oldId = oldPaymentId!.toString();
  const byRepository = await findPaymentByPublicId(db, merchant, oldId);
  assert.equal(byRepository?.id, oldPaymentId!);
  assert.equal((await findRefund(db, merchant, oldPaymentId!, oldRefundId!.toString()))?.id, oldRefundId!);

  const f = await startFullPayments(t, { db });
  const as = { "x-test-merchant": merchant };
  const got = await f.call("GET", `/v1/payments/${oldId}`, undefined, as);
  assert.equal(got.status, 200, got.text);
  assert.equal(got.body.id, oldId, "the old URL and the old id");
  assert.equal(got.body.status, "captured");
  const refund = await f.call("GET", `/v1/payments/${oldId}/refunds/${oldRefundId!}`, undefined, as);
  assert.equal(refund.status, 200, refund.text);
  assert.deepEqual([refund.body.id, refund.body.paymentId], [oldRefundId!.toString(), oldId]);

  const paid = await f.pay(paymentBody(), "new-1", merchant);
  assert.equal(paid.status, 201, paid.text);
  assert.match(String(paid.body.id), PAYMENT_ID);
  const { rows } = await db.query<{ id: bigint }>("SELECT id FROM payments WHERE public_id = $1", [
    paid.body.id,
  ]);
  assert.equal(rows[0]!.id, oldPaymentId! + 1n, "the internal sequence carries on underneath");
});

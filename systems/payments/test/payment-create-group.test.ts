/**
 * New payments group-committed (issue 14, store/payment-create-group.ts): creates submitted
 * together are ONE autocommit statement — their keys advanced to the saga, their holds one
 * ledger_write batch, their rows one INSERT — with the single path's effects; any refusal inside
 * (payments_require, 021) fails the whole statement and answers every create `alone`. On PGlite
 * and PostgreSQL.
 */
import assert from "node:assert/strict";
import type { IdempotencyLease, IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { type PaymentCreate, PaymentCreateGroup } from "../src/store/payment-create-group.ts";
import { ensureMerchantAccounts } from "../src/store/payment-repository.ts";
import { balances, openTestDb } from "./payment-fixture.ts";
import { testOnEngines } from "./payments-full-fixture.ts";

const MERCHANTS = ["m_a", "m_b", "m_a", "m_a", "m_b", "m_a"];

async function begun(
  idempotency: IdempotencyStore,
  merchant: string,
  key: string,
): Promise<IdempotencyLease> {
  const fingerprint = fingerprintRequest({ method: "POST", path: "/v1/payments", body: { key } });
  const started = await idempotency.begin({ scope: merchant, key, fingerprint });
  assert.equal(started.kind, "started");
  return (started as { lease: IdempotencyLease }).lease;
}

async function creates(idempotency: IdempotencyStore): Promise<PaymentCreate[]> {
  const nowMs = Date.now();
  return Promise.all(
    MERCHANTS.map(async (merchantId, i) => ({
      lease: await begun(idempotency, merchantId, `k${i}`),
      input: {
        merchantId,
        idempotencyKey: `k${i}`,
        amountMinor: BigInt(1_000 + i),
        currency: "BRL",
        cardToken: "tok_visa_4242",
        capture: true,
        idemGeneration: 1,
        nowMs,
        leaseOwner: "api-1",
        leaseMs: 5_000,
      },
    })),
  );
}

/** The merchants' accounts, opened as their first payment would: the group writes for merchants that have them. */
async function openAccounts(db: Database, merchants: readonly string[]): Promise<void> {
  for (const merchant of new Set(merchants))
    await db.transaction((tx) => ensureMerchantAccounts(tx, merchant, "BRL"));
}

async function keySteps(db: Database): Promise<string[]> {
  const { rows } = await db.query<{ recovery_point: string }>(
    "SELECT recovery_point FROM idempotency_keys ORDER BY merchant_id, key",
  );
  return rows.map((r) => r.recovery_point);
}

testOnEngines(
  "creates submitted together are one statement with the single path's effects",
  async (t, url) => {
    const { db } = await openTestDb(t, url);
    const idempotency = paymentsIdempotencyStore(db);
    const group = new PaymentCreateGroup(db, idempotency);
    const items = await creates(idempotency);
    await openAccounts(db, MERCHANTS);

    const outcomes = await Promise.all(items.map((c) => group.submit(c)));
    assert.deepEqual(group.stats, { batches: 1, items: 6, refused: 0 }, "six creates, one group");
    const payments = outcomes.map((o) => {
      assert.equal(o.kind, "written");
      return (o as { payment: { id: bigint; idempotencyKey: string; amountMinor: bigint; step: string } })
        .payment;
    });
    assert.deepEqual(
      payments.map((p) => [p.idempotencyKey, p.amountMinor, p.step]),
      items.map((c) => [c.input.idempotencyKey, c.input.amountMinor, "authorize"]),
      "each caller gets its own payment, in submit order",
    );
    assert.equal(new Set(payments.map((p) => p.id)).size, 6);
    assert.deepEqual(await keySteps(db), Array(6).fill("saga_authorize"));

    // Each payment's hold: pending, its own amount, the merchant's pending credit the sum of them.
    const { rows } = await db.query<{ status: string; amount: bigint; lease_owner: string }>(
      `SELECT t.status, e.amount, p.lease_owner FROM payments p
       JOIN transactions t ON t.id = p.hold_transaction_id
       JOIN entries e ON e.transaction_id = t.id AND e.direction = 'C'
      ORDER BY p.id`,
    );
    assert.deepEqual(
      rows.map((r) => [r.status, r.amount, r.lease_owner]),
      payments
        .slice()
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .map((p) => ["pending", p.amountMinor, "api-1"]),
    );
    const sum = (merchant: string) =>
      items.filter((c) => c.input.merchantId === merchant).reduce((s, c) => s + c.input.amountMinor, 0n);
    for (const merchant of ["m_a", "m_b"]) {
      const b = await balances(db, merchant);
      assert.equal(b.merchant_pending!.pending_credits, sum(merchant));
      assert.equal(b.customer_funds!.pending_debits, sum(merchant));
    }
  },
);

testOnEngines(
  "a refusal inside a group of creates rolls all of it back: every create goes alone",
  async (t, url) => {
    const { db } = await openTestDb(t, url);
    const idempotency = paymentsIdempotencyStore(db);
    const group = new PaymentCreateGroup(db, idempotency);
    const items = await creates(idempotency);

    // A merchant without accounts yet: its first payment opens them, in a transaction of its own.
    assert.deepEqual(
      (await Promise.all(items.map((c) => group.submit(c)))).map((o) => o.kind),
      Array(6).fill("alone"),
    );
    await openAccounts(db, MERCHANTS);

    // A client retry took one key over: the group must not advance it, nor create anything.
    await db.query(
      "UPDATE idempotency_keys SET generation = generation + 1 WHERE merchant_id = 'm_b' AND key = 'k4'",
    );
    const outcomes = await Promise.all(items.map((c) => group.submit(c)));
    assert.deepEqual(
      outcomes.map((o) => o.kind),
      Array(6).fill("alone"),
    );
    const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM payments");
    assert.equal(rows[0]!.n, 0, "no payment, no hold");
    assert.deepEqual(await keySteps(db), Array(6).fill("started"), "no key advanced");

    // A currency outside ISO 4217 (no accounts can exist for it) does the same.
    const fresh = await Promise.all(
      ["x0", "x1"].map(async (key, i) => ({
        lease: await begun(idempotency, "m_c", key),
        input: {
          ...items[0]!.input,
          merchantId: "m_c",
          idempotencyKey: key,
          currency: i === 1 ? "XXZ" : "BRL",
        },
      })),
    );
    assert.deepEqual(
      (await Promise.all(fresh.map((c) => group.submit(c)))).map((o) => o.kind),
      ["alone", "alone"],
    );
    const after = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM payments");
    assert.equal(after.rows[0]!.n, 0);
  },
);

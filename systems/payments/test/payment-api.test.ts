/**
 * The payment API and saga end to end on PGlite, against the REAL acquirer simulator over HTTP:
 * PY-05 (happy path, decline compensation), PY-06 (timeout after charge → status query),
 * PY-13 (a retry after a lost response replays it; one authorization), PY-12 (outage → breaker →
 * 202 pending or 503; pending sagas finish after), PY-15/PY-16 (authorize-only, capture, partial refunds),
 * PY-16 partial capture (on PGlite and PostgreSQL: the part posted and the rest released in one
 * transaction, refunds bounded by the capture, bad input writes nothing, a keyed capture replays).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engineFree } from "@casebook/lab/test-engines";
import { paymentAcquirerKey } from "../src/domain/derived-keys.ts";
import { balances, paymentBody, waitFor } from "./payment-fixture.ts";
import { startFullPayments as startPayments, testOnEngines } from "./payments-full-fixture.ts";

test("PY-05 happy path: reserve, authorize, capture; the hold is posted and the ledger balances", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody(), "happy-1");
  assert.equal(res.status, 201);
  assert.equal(res.body.status, "captured");
  assert.equal(res.body.capturedMinor, "5000");
  const b = await balances(f.db, f.merchant);
  assert.equal(b.merchant_pending!.posted, 5000n);
  assert.equal(b.customer_funds!.posted, -5000n);
  assert.equal(b.merchant_pending!.pending_credits, 0n);
  const view = f.sim.sim.state.getByKey(`${f.merchant}:happy-1`);
  assert.equal(view.status, "captured");
  assert.equal(view.attempts, 1);
});

test("PY-05 a decline compensates: the hold is voided and every balance is back to zero", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody({ cardToken: "tok_decline_1" }), "decline-1");
  assert.equal(res.status, 201);
  assert.equal(res.body.status, "declined");
  assert.equal(res.body.declineReason, "do_not_honor");
  const b = await balances(f.db, f.merchant);
  for (const role of ["customer_funds", "merchant_pending"]) {
    assert.equal(b[role]!.posted, 0n);
    assert.equal(b[role]!.pending_debits, 0n);
    assert.equal(b[role]!.pending_credits, 0n);
  }
  const { rows } = await f.db.query<{ status: string }>(
    "SELECT t.status FROM payments p JOIN transactions t ON t.id = p.hold_transaction_id WHERE p.merchant_id = $1",
    [f.merchant],
  );
  assert.equal(rows[0]!.status, "voided");
});

test("PY-06 the charge happens but its response is lost: the saga queries by key and captures exactly once", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  f.sim.sim.faults.update({ timeoutAfterChargeRate: 1, timeoutMode: "reset" });
  // Only the authorize loses its answer: turn the fault off once the acquirer has the charge.
  const key = `${f.merchant}:lost-1`;
  const watcher = waitFor(
    async () => (f.sim.sim.state.stats().authorizations > 0 ? true : undefined),
    5_000,
    1,
  ).then(() => f.sim.sim.faults.update({ timeoutAfterChargeRate: 0 }));
  const res = await f.pay(paymentBody(), "lost-1");
  await watcher;
  const final =
    res.status === 201
      ? res.body
      : await waitFor(async () => {
          await f.orchestrator.runOnce();
          const got = await f.call("GET", `/v1/payments/${res.body.id}`);
          return got.body.status === "captured" ? got.body : undefined;
        });
  assert.equal(final.status, "captured");
  const auth = f.sim.sim.state.getByKey(key);
  assert.equal(auth.attempts, 1, "no blind retry: the status query resolved the unknown outcome");
  assert.equal(auth.status, "captured");
  assert.equal(f.sim.sim.state.stats().captures, 1);
  assert.equal(f.sim.sim.faults.counters().responsesLost, 1);
  assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, 5000n);
});

test("PY-13 a client retry after a lost response gets the same bytes; the acquirer saw one authorization", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const first = await f.pay(paymentBody(), "retry-1"); // the client "never received" this
  const second = await f.pay(paymentBody(), "retry-1");
  assert.equal(first.status, 201);
  assert.equal(second.status, 201);
  assert.equal(second.text, first.text);
  const auth = f.sim.sim.state.getByKey(`${f.merchant}:retry-1`);
  assert.equal(auth.attempts, 1);
  assert.equal(f.sim.sim.state.stats().authorizations, 1);
  const { rows } = await f.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM payments WHERE merchant_id = $1",
    [f.merchant],
  );
  assert.equal(rows[0]!.n, 1n);
});

test("PY-01 bad input is refused BEFORE the idempotency begin: nothing is stored, the key stays free", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const bad = await f.pay(paymentBody({ amountMinor: "-5", currency: "brl", extra: 1 }), "bad-1");
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, "PAYMENTS_PAYMENT_INVALID");
  const fields = (bad.body.errors as { field: string }[]).map((e) => e.field).sort();
  assert.deepEqual(fields, ["/body/amountMinor", "/body/currency", "/body/extra"]);
  assert.equal(await f.idempotency.find(f.merchant, "bad-1"), undefined);
  const missing = await f.call("POST", "/v1/payments", paymentBody());
  assert.equal(missing.body.code, "PAYMENTS_IDEMPOTENCY_KEY_MISSING");
  const good = await f.pay(paymentBody(), "bad-1");
  assert.equal(good.status, 201);
});

test("one Idempotency-Key rule: any 1-255 visible ASCII key pays and refunds once (the acquirer gets a key in its charset); others are 400 naming the header", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const key = `order#1/{"x"}${"~".repeat(240)}`.slice(0, 255);
  const res = await f.pay(paymentBody(), key);
  assert.equal(res.status, 201);
  assert.equal(res.body.status, "captured");
  assert.equal((await f.pay(paymentBody(), key)).text, res.text, "a retry replays it");
  const acquirerKey = paymentAcquirerKey(f.merchant, key);
  assert.match(acquirerKey, /^[A-Za-z0-9_-]+:sha256\.[0-9a-f]{64}$/);
  assert.equal(f.sim.sim.state.getByKey(acquirerKey).attempts, 1);
  // Two long plain keys: the refund's acquirer key still fits the acquirer's bound.
  const plain = "p".repeat(150);
  const paid = await f.pay(paymentBody(), plain);
  const refund = await f.call(
    "POST",
    `/v1/payments/${paid.body.id}/refunds`,
    { amountMinor: "1000" },
    {
      "idempotency-key": "r".repeat(150),
    },
  );
  assert.equal(refund.status, 201);
  assert.equal(refund.body.status, "succeeded");
  for (const bad of ["has space", "k".repeat(256), "tab\t", ""]) {
    const refused = await f.pay(paymentBody(), bad);
    assert.equal(refused.status, 400, JSON.stringify(bad));
    assert.equal(refused.body.code, "REQUEST_INVALID");
    assert.deepEqual(
      (refused.body.errors as { field: string }[]).map((e) => e.field),
      ["/headers/idempotency-key"],
    );
  }
  const { rows } = await f.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM payments WHERE merchant_id = $1",
    [f.merchant],
  );
  assert.equal(rows[0]!.n, 2n, "a refused key stores nothing");
});

test("PY-12 outage: the breaker opens, new payments get 202 pending, and they complete after the outage", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t, { client: { breaker: { failureThreshold: 1, openDurationMs: 200 } } });
  f.sim.sim.faults.update({ outage: true });
  const first = await f.pay(paymentBody(), "outage-1");
  assert.equal(first.status, 202);
  assert.equal(first.body.status, "pending");
  assert.equal(f.acquirer.breaker.state, "open");
  const second = await f.pay(paymentBody(), "outage-2");
  assert.equal(second.status, 202, "breaker open: accepted as pending without calling the acquirer");
  assert.equal(f.sim.sim.state.stats().authorizations, 0);
  f.sim.sim.faults.update({ outage: false });
  f.orchestrator.start();
  for (const key of ["outage-1", "outage-2"]) {
    const id = key === "outage-1" ? first.body.id : second.body.id;
    await waitFor(async () => {
      const got = await f.call("GET", `/v1/payments/${id}`);
      return got.body.status === "captured" ? true : undefined;
    });
    assert.equal(f.sim.sim.state.getByKey(`${f.merchant}:${key}`).status, "captured");
  }
  // The idempotency record now holds the final answer: the retry replays 201 captured.
  const replay = await f.pay(paymentBody(), "outage-1");
  assert.equal(replay.status, 201);
  assert.equal(replay.body.status, "captured");
});

test("PY-12 fail-fast mode: while the breaker is open a new payment gets 503 and nothing is stored", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t, {
    routes: { breakerOpenMode: "fail-fast" },
    client: { breaker: { failureThreshold: 1, openDurationMs: 60_000 } },
  });
  f.sim.sim.faults.update({ outage: true });
  const first = await f.pay(paymentBody(), "ff-1"); // opens the breaker, accepted (it was closed when it came)
  assert.equal(first.status, 202);
  const refused = await f.pay(paymentBody(), "ff-2");
  assert.equal(refused.status, 503);
  assert.equal(refused.body.code, "PAYMENTS_ACQUIRER_UNAVAILABLE");
  assert.equal(await f.idempotency.find(f.merchant, "ff-2"), undefined);
});

test("PY-16 authorize only keeps the hold pending; a later capture posts it", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody({ capture: false }), "auth-only-1");
  assert.equal(res.status, 201);
  assert.equal(res.body.status, "authorized");
  let b = await balances(f.db, f.merchant);
  assert.equal(b.merchant_pending!.pending_credits, 5000n);
  assert.equal(b.merchant_pending!.posted, 0n);
  const captured = await f.call("POST", `/v1/payments/${res.body.id}/capture`);
  assert.equal(captured.status, 200);
  assert.equal(captured.body.status, "captured");
  b = await balances(f.db, f.merchant);
  assert.equal(b.merchant_pending!.posted, 5000n);
  assert.equal(b.merchant_pending!.pending_credits, 0n);
  const again = await f.call("POST", `/v1/payments/${res.body.id}/capture`);
  assert.equal(again.status, 409);
});

test("PY-16 void of an authorized payment releases the hold", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody({ capture: false }), "void-1");
  // As a client that always sends a JSON Content-Type: void takes no body, so an empty one is accepted.
  const voided = await f.call("POST", `/v1/payments/${res.body.id}/void`, undefined, {
    "content-type": "application/json",
  });
  assert.equal(voided.status, 200);
  assert.equal(voided.body.status, "voided");
  assert.equal(f.sim.sim.state.getByKey(`${f.merchant}:void-1`).status, "voided");
  const b = await balances(f.db, f.merchant);
  assert.equal(b.merchant_pending!.pending_credits, 0n);
  assert.equal(b.merchant_pending!.posted, 0n);
});

test("PY-15 partial refunds: reversal entries, own keys, replay-safe, never beyond the capture", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody(), "refund-1");
  const path = `/v1/payments/${res.body.id}/refunds`;
  const r1 = await f.call("POST", path, { amountMinor: "1500" }, { "idempotency-key": "rf-a" });
  assert.equal(r1.status, 201);
  assert.equal(r1.body.status, "succeeded");
  const r1again = await f.call("POST", path, { amountMinor: "1500" }, { "idempotency-key": "rf-a" });
  assert.equal(r1again.text, r1.text);
  const tooMuch = await f.call("POST", path, { amountMinor: "4000" }, { "idempotency-key": "rf-b" });
  assert.equal(tooMuch.status, 422);
  assert.equal(tooMuch.body.code, "PAYMENTS_REFUND_EXCEEDS_CAPTURED");
  const r2 = await f.call("POST", path, { amountMinor: "3500" }, { "idempotency-key": "rf-c" });
  assert.equal(r2.status, 201);
  const payment = await f.call("GET", `/v1/payments/${res.body.id}`);
  assert.equal(payment.body.status, "refunded");
  assert.equal(payment.body.refundedMinor, "5000");
  assert.equal(f.sim.sim.state.getByKey(`${f.merchant}:refund-1`).refundedMinor, 5000n);
  assert.equal(f.sim.sim.state.stats().refunds, 2);
  const b = await balances(f.db, f.merchant);
  assert.equal(b.merchant_pending!.posted, 0n);
  assert.equal(b.customer_funds!.posted, 0n);
  const { rows } = await f.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM transactions t JOIN payments p ON t.reverses_id = p.hold_transaction_id WHERE p.public_id = $1",
    [res.body.id],
  );
  assert.equal(rows[0]!.n, 2n);
});

test("payments are scoped to their merchant: another merchant's id answers 404", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody(), "scope-1");
  const other = await f.call("GET", `/v1/payments/${res.body.id}`, undefined, {
    "x-test-merchant": "someone-else",
  });
  assert.equal(other.status, 404);
  assert.equal(other.body.code, "PAYMENTS_PAYMENT_NOT_FOUND");
});

/** The payment's hold and (after a partial capture) capture transactions, with the writing transaction id. */
async function holdAndCapture(f: Awaited<ReturnType<typeof startPayments>>, paymentId: string) {
  const { rows } = await f.db.query<{
    role: string;
    id: bigint;
    status: string;
    amount: bigint;
    writer: string;
  }>(
    `SELECT CASE WHEN t.id = p.hold_transaction_id THEN 'hold' ELSE 'capture' END AS role, t.id, t.status,
            (SELECT sum(e.amount) FROM entries e WHERE e.transaction_id = t.id AND e.direction = 'D')::int8 AS amount,
            t.xmin::text AS writer
       FROM payments p JOIN transactions t ON t.id IN (p.hold_transaction_id, p.capture_transaction_id)
      WHERE p.public_id = $1`,
    [paymentId],
  );
  return Object.fromEntries(rows.map((r) => [r.role, r]));
}

testOnEngines(
  "PY-16 partial capture: the acquirer captures the part, the ledger posts it and releases the rest in one transaction; refunds stop at the capture",
  async (t, url) => {
    const f = await startPayments(t, { url });
    const res = await f.pay(paymentBody({ capture: false }), "partial-1");
    assert.equal(res.body.status, "authorized");
    const id = String(res.body.id);
    const captured = await f.call("POST", `/v1/payments/${id}/capture`, { amountMinor: "3000" });
    assert.equal(captured.status, 200, captured.text);
    assert.equal(captured.body.status, "captured");
    assert.equal(captured.body.capturedMinor, "3000");
    const auth = f.sim.sim.state.getByKey(`${f.merchant}:partial-1`);
    assert.equal(auth.capturedMinor, 3000n, "the acquirer captured the part, not the authorization");
    let b = await balances(f.db, f.merchant);
    assert.equal(b.merchant_pending!.posted, 3000n);
    assert.equal(b.merchant_pending!.pending_credits, 0n, "the uncaptured 2000 is released");
    assert.equal(b.customer_funds!.posted, -3000n);
    assert.equal(b.customer_funds!.pending_debits, 0n);
    const tx = await holdAndCapture(f, id);
    assert.equal(tx.hold!.status, "voided");
    assert.equal(tx.hold!.amount, 5000n, "the hold's entries are untouched");
    assert.equal(tx.capture!.status, "posted");
    assert.equal(tx.capture!.amount, 3000n);
    assert.equal(tx.capture!.writer, tx.hold!.writer, "release and posting committed in ONE transaction");
    const path = `/v1/payments/${id}/refunds`;
    const tooMuch = await f.call("POST", path, { amountMinor: "3500" }, { "idempotency-key": "prf-1" });
    assert.equal(tooMuch.status, 422);
    assert.equal(tooMuch.body.code, "PAYMENTS_REFUND_EXCEEDS_CAPTURED");
    assert.equal(tooMuch.body.refundableMinor, "3000");
    const refund = await f.call("POST", path, { amountMinor: "3000" }, { "idempotency-key": "prf-2" });
    assert.equal(refund.status, 201, refund.text);
    assert.equal((await f.call("GET", `/v1/payments/${id}`)).body.status, "refunded");
    assert.equal(f.sim.sim.state.getByKey(`${f.merchant}:partial-1`).refundedMinor, 3000n);
    b = await balances(f.db, f.merchant);
    assert.equal(b.merchant_pending!.posted, 0n);
    assert.equal(b.customer_funds!.posted, 0n);
    const { rows } = await f.db.query<{ reverses_id: bigint }>(
      // Ledger keys hold the internal id (`pay:<id>:refund:<key>`), not the public one.
      "SELECT t.reverses_id FROM transactions t JOIN payments p ON p.public_id = $1 WHERE t.idem_key = 'pay:' || p.id || ':refund:prf-2'",
      [id],
    );
    assert.equal(
      rows[0]!.reverses_id,
      tx.capture!.id,
      "the refund reverses the capture transfer, not the hold",
    );
  },
);

testOnEngines(
  "PY-16 capture input is checked before anything is written, naming the field",
  async (t, url) => {
    const f = await startPayments(t, { url });
    const res = await f.pay(paymentBody({ capture: false }), "cap-bad");
    const path = `/v1/payments/${res.body.id}/capture`;
    const fieldsOf = (reply: { body: Record<string, unknown> }) =>
      (reply.body.errors as { field: string }[]).map((e) => e.field).sort();
    const notANumber = await f.call("POST", path, { amountMinor: "12.5" }, { "idempotency-key": "cap-b1" });
    assert.equal(notANumber.status, 400);
    assert.equal(notANumber.body.code, "PAYMENTS_PAYMENT_INVALID");
    assert.deepEqual(fieldsOf(notANumber), ["/body/amountMinor"]);
    const unknown = await f.call(
      "POST",
      path,
      { amountMinor: "100", amount: 1 },
      { "idempotency-key": "cap-b2" },
    );
    assert.equal(unknown.status, 400);
    assert.deepEqual(fieldsOf(unknown), ["/body/amount"]);
    const tooMuch = await f.call("POST", path, { amountMinor: "5001" }, { "idempotency-key": "cap-b3" });
    assert.equal(tooMuch.status, 422);
    assert.equal(tooMuch.body.code, "PAYMENTS_CAPTURE_EXCEEDS_AUTHORIZED");
    assert.equal(tooMuch.body.authorizedMinor, "5000");
    assert.deepEqual(fieldsOf(tooMuch), ["/body/amountMinor"]);
    for (const key of ["cap-b1", "cap-b2", "cap-b3"])
      assert.equal(await f.idempotency.find(f.merchant, key), undefined);
    const { rows } = await f.db.query<{ status: string; step: string; capture_amount_minor: bigint | null }>(
      "SELECT status, step, capture_amount_minor FROM payments WHERE public_id = $1",
      [res.body.id],
    );
    assert.deepEqual({ ...rows[0] }, { status: "authorized", step: "done", capture_amount_minor: null });
    assert.equal(f.sim.sim.state.stats().captures, 0);
    const good = await f.call("POST", path, { amountMinor: "5000" }, { "idempotency-key": "cap-b3" });
    assert.equal(good.status, 200, "the key refused earlier is free: nothing was stored");
    assert.equal(good.body.capturedMinor, "5000");
  },
);

test("PY-16 a capture with an Idempotency-Key replays its stored answer; the key with another amount is 422; a keyless repeat is 409", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody({ capture: false }), "cap-idem");
  const path = `/v1/payments/${res.body.id}/capture`;
  const first = await f.call("POST", path, { amountMinor: "2000" }, { "idempotency-key": "cap-k1" });
  assert.equal(first.status, 200);
  assert.equal(first.body.capturedMinor, "2000");
  const again = await f.call("POST", path, { amountMinor: "2000" }, { "idempotency-key": "cap-k1" });
  assert.equal(again.status, 200);
  assert.equal(again.text, first.text, "the stored answer, byte for byte");
  const other = await f.call("POST", path, { amountMinor: "2500" }, { "idempotency-key": "cap-k1" });
  assert.equal(other.status, 422);
  assert.equal(other.body.code, "PAYMENTS_IDEMPOTENCY_MISMATCH");
  const keyless = await f.call("POST", path, { amountMinor: "2000" });
  assert.equal(keyless.status, 409);
  assert.equal(f.sim.sim.state.stats().captures, 1);
  assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, 2000n);
});

test("PY-16 PY-06 a partial capture whose answer is lost is retried with the same amount: one capture, one posting", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const res = await f.pay(paymentBody({ capture: false }), "cap-lost");
  const id = String(res.body.id);
  f.sim.sim.faults.update({ timeoutAfterChargeRate: 1, timeoutMode: "reset" });
  // Only the first capture loses its answer: the fault goes off once the acquirer has captured.
  const watcher = waitFor(
    async () => (f.sim.sim.state.stats().captures > 0 ? true : undefined),
    5_000,
    1,
  ).then(() => f.sim.sim.faults.update({ timeoutAfterChargeRate: 0 }));
  const reply = await f.call("POST", `/v1/payments/${id}/capture`, { amountMinor: "1234" });
  await watcher;
  const final =
    reply.status === 200
      ? reply.body
      : await waitFor(async () => {
          await f.orchestrator.runOnce();
          const got = await f.call("GET", `/v1/payments/${id}`);
          return got.body.status === "captured" ? got.body : undefined;
        });
  assert.equal(final.capturedMinor, "1234");
  assert.equal(f.sim.sim.faults.counters().responsesLost, 1);
  assert.equal(f.sim.sim.state.stats().captures, 1);
  assert.equal(
    f.sim.sim.state.getByKey(`${f.merchant}:cap-lost`).capturedMinor,
    1234n,
    "the retry carried 1234",
  );
  const tx = await holdAndCapture(f, id);
  assert.equal(tx.capture!.amount, 1234n);
  assert.equal((await balances(f.db, f.merchant)).merchant_pending!.posted, 1234n);
});

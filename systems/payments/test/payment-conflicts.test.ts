/**
 * A 409 on a transition the payment cannot take names its current status (`paymentStatus`), the refused
 * `action` and the `allowedActions` now (fields), and says the same in its `detail` — on
 * every transition route: capture, void, refund; with and without an Idempotency-Key.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { engineFree } from "@casebook/lab/test-engines";
import { allowedActions, stateConflict } from "../src/domain/payment-actions.ts";
import type { PaymentStatus } from "../src/domain/payment-saga.ts";
import { paymentBody, type Reply } from "./payment-fixture.ts";
import { startFullPayments as startPayments } from "./payments-full-fixture.ts";

test("allowedActions: capture/void while authorized, refund while something is left to refund, none otherwise", (t) => {
  if (engineFree(t)) return;
  const done = (status: PaymentStatus) => allowedActions({ step: "done", status, intent: "authorize" });
  assert.deepEqual(done("authorized"), ["capture", "void"]);
  assert.deepEqual(done("captured"), ["refund"]);
  assert.deepEqual(done("partially_refunded"), ["refund"]);
  for (const status of ["pending", "voided", "declined", "failed", "refunded"] as const) {
    assert.deepEqual(done(status), [], status);
  }
  assert.deepEqual(allowedActions({ step: "capture", status: "authorized", intent: "capture" }), []);
  assert.deepEqual(allowedActions({ step: "authorize", status: "pending", intent: "authorize" }), []);
  const conflict = stateConflict({ step: "capture", status: "authorized", intent: "capture" }, "void");
  assert.equal(
    conflict.message,
    "The payment is authorized with a capture in progress, so it cannot take a void; no action is allowed now.",
  );
});

function assertConflict(reply: Reply, status: string, action: string, allowed: string[]): void {
  assert.equal(reply.status, 409, reply.text);
  assert.equal(reply.body.code, "PAYMENTS_PAYMENT_STATE_CONFLICT");
  assert.equal(reply.body.status, 409, "RFC 9457's status is the HTTP code");
  assert.equal(reply.body.paymentStatus, status);
  assert.equal(reply.body.action, action);
  assert.deepEqual(reply.body.allowedActions, allowed);
  const words = allowed.length === 0 ? "no action is allowed now" : `allowed now: ${allowed.join(", ")}`;
  assert.equal(reply.body.detail, `The payment is ${status}, so it cannot take a ${action}; ${words}.`);
}

test("409 on capture, void and refund names the status and the allowed actions", async (t) => {
  if (engineFree(t)) return;
  const f = await startPayments(t);
  const authorized = await f.pay(paymentBody({ capture: false }), "conflict-auth");
  assert.equal(authorized.body.status, "authorized");
  const refundAuthorized = await f.call(
    "POST",
    `/v1/payments/${authorized.body.id}/refunds`,
    { amountMinor: "100" },
    { "idempotency-key": "conflict-r1" },
  );
  assertConflict(refundAuthorized, "authorized", "refund", ["capture", "void"]);

  const captured = await f.pay(paymentBody(), "conflict-captured");
  assert.equal(captured.body.status, "captured");
  const capturedPath = `/v1/payments/${captured.body.id}`;
  assertConflict(await f.call("POST", `${capturedPath}/capture`), "captured", "capture", ["refund"]);
  assertConflict(await f.call("POST", `${capturedPath}/void`), "captured", "void", ["refund"]);
  const keyed = await f.call("POST", `${capturedPath}/void`, undefined, { "idempotency-key": "conflict-v1" });
  assertConflict(keyed, "captured", "void", ["refund"]);

  const voided = await f.pay(paymentBody({ capture: false }), "conflict-voided");
  assert.equal((await f.call("POST", `/v1/payments/${voided.body.id}/void`)).status, 200);
  assertConflict(await f.call("POST", `/v1/payments/${voided.body.id}/capture`), "voided", "capture", []);
  const refundVoided = await f.call(
    "POST",
    `/v1/payments/${voided.body.id}/refunds`,
    { amountMinor: "100" },
    { "idempotency-key": "conflict-r2" },
  );
  assertConflict(refundVoided, "voided", "refund", []);
});

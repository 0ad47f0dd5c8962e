/** The pure saga state machine (payment-saga.ts): every transition the orchestrator relies on. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BackoffPolicy } from "@casebook/kit/backoff";
import { TokenBucket } from "@casebook/kit/token-bucket";
import {
  decide,
  initialSagaState,
  requestSettlement,
  resumeStep,
  statusAfterRefunds,
} from "../src/domain/payment-saga.ts";

const policy = new BackoffPolicy({
  baseMs: 100,
  capMs: 1_000,
  jitter: "none",
  budgetMs: 10_000,
  maxAttempts: 5,
});
const ctx = { elapsedMs: 0, policy };

test("PY-05 approved with capture goes to capture, then captured posts the hold", () => {
  const approved = decide(
    initialSagaState({ capture: true }),
    { kind: "approved", authorizationId: "a1" },
    ctx,
  );
  assert.equal(approved.step, "capture");
  assert.equal(approved.status, "authorized");
  const captured = decide(approved, { kind: "captured", authorizationId: "a1" }, ctx);
  assert.deepEqual(
    [captured.step, captured.status, captured.ledger, captured.finished],
    ["done", "captured", "post-hold", true],
  );
});

test("PY-16 authorize only stops at authorized with the hold left pending", () => {
  const d = decide(initialSagaState({ capture: false }), { kind: "approved", authorizationId: "a1" }, ctx);
  assert.deepEqual([d.step, d.status, d.ledger], ["done", "authorized", "none"]);
  const capture = requestSettlement(d, "capture");
  assert.equal(capture?.step, "capture");
  assert.equal(requestSettlement({ ...d, status: "captured" }, "capture"), undefined);
});

test("PY-05 a decline compensates by voiding the hold", () => {
  const d = decide(
    initialSagaState({ capture: true }),
    { kind: "declined", authorizationId: "a1", reason: "do_not_honor" },
    ctx,
  );
  assert.deepEqual(
    [d.step, d.status, d.ledger, d.declineReason],
    ["done", "declined", "void-hold", "do_not_honor"],
  );
});

test("PY-06 an unknown outcome goes to the status query, never to a blind retry or a failure", () => {
  const d = decide(initialSagaState({ capture: true }), { kind: "unknown", reason: "headers timeout" }, ctx);
  assert.equal(d.step, "query");
  assert.equal(d.delayMs, 100);
  const found = decide(d, { kind: "approved", authorizationId: "a1" }, ctx);
  assert.equal(found.step, "capture");
  const missing = decide(d, { kind: "not-found" }, ctx);
  assert.equal(missing.step, "authorize");
  assert.equal(resumeStep(initialSagaState({ capture: true }), { takenOver: true }), "query");
  assert.equal(resumeStep(initialSagaState({ capture: true }), { takenOver: false }), "authorize");
});

test("PY-12 an unavailable acquirer is retried with backoff; past the budget the saga checks, then fails", () => {
  let state = decide(
    initialSagaState({ capture: true }),
    { kind: "unavailable", reason: "503", retryAfterMs: 500 },
    ctx,
  );
  assert.deepEqual([state.step, state.delayMs], ["authorize", 500]);
  state = decide({ ...state, attempts: 4 }, { kind: "unavailable", reason: "503" }, ctx);
  assert.equal(state.step, "query", "budget spent: confirm nothing was charged first");
  const failed = decide(state, { kind: "not-found" }, ctx);
  assert.deepEqual([failed.step, failed.status, failed.ledger], ["done", "failed", "void-hold"]);
});

test("PY-15 refund statuses and the token bucket bound", () => {
  assert.equal(statusAfterRefunds(5000n, 0n), "captured");
  assert.equal(statusAfterRefunds(5000n, 1500n), "partially_refunded");
  assert.equal(statusAfterRefunds(5000n, 5000n), "refunded");
  assert.throws(() => statusAfterRefunds(5000n, 5001n), RangeError);
  const bucket = new TokenBucket({ capacity: 2, ratePerS: 10, nowMs: 0 });
  assert.equal(bucket.take(0), 0);
  assert.equal(bucket.take(0), 0);
  assert.equal(bucket.take(0), 100);
  assert.equal(bucket.take(100), 0);
});

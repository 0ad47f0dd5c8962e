import assert from "node:assert/strict";
import { test } from "node:test";
import { CasebookError } from "../src/errors.ts";
import {
  CANONICAL_MAX_DEPTH,
  canonicalJson,
  checkAdvance,
  checkStoredResponse,
  decideExisting,
  defineIdempotencyErrors,
  type ExistingEntry,
  fingerprintDigest,
  fingerprintRequest,
  IDEMPOTENCY_KEY_MAX_LENGTH,
  mismatchedParts,
  RECOVERY_FINISHED,
  RECOVERY_STARTED,
  RESPONSE_BODY_MAX_BYTES,
  selectReplayHeaders,
  validateIdempotencyKey,
} from "../src/idempotency.ts";

/** A system's codes, as payments defines PAYMENTS_IDEMPOTENCY_*. */
const testIdempotency = defineIdempotencyErrors("TEST");
const idempotencyErrors = testIdempotency.registry;
type IdempotencyErrorCode = keyof typeof idempotencyErrors.specs;

const POLICY = { leaseMs: 60_000, retentionMs: 86_400_000 };
const PAYMENT = fingerprintRequest({
  method: "POST",
  path: "/payments",
  body: { amount: "5000", currency: "BRL" },
});

function keyError(raw: unknown): string {
  try {
    validateIdempotencyKey(raw, testIdempotency);
  } catch (err) {
    assert.ok(idempotencyErrors.is(err, "TEST_IDEMPOTENCY_KEY_INVALID"));
    return String(err.fields.reason);
  }
  return "accepted";
}

test("defineIdempotencyErrors: <AREA>_IDEMPOTENCY_* codes with the shared statuses, messages the system may reword", () => {
  const payments = defineIdempotencyErrors("PAYMENTS", {
    KEY_INVALID: "Send a fresh UUID per payment attempt.",
  });
  assert.deepEqual(Object.keys(payments.registry.specs).sort(), [
    "PAYMENTS_IDEMPOTENCY_IN_PROGRESS",
    "PAYMENTS_IDEMPOTENCY_KEY_INVALID",
    "PAYMENTS_IDEMPOTENCY_LOCK_LOST",
    "PAYMENTS_IDEMPOTENCY_MISMATCH",
    "PAYMENTS_IDEMPOTENCY_RESPONSE_TOO_LARGE",
  ]);
  assert.equal(
    payments.registry.specs.PAYMENTS_IDEMPOTENCY_KEY_INVALID.message,
    "Send a fresh UUID per payment attempt.",
  );
  const error = payments.create("LOCK_LOST", { fields: { key: "k" } });
  assert.ok(payments.is(error, "LOCK_LOST") && !payments.is(error, "MISMATCH"));
  assert.ok(!testIdempotency.is(error, "LOCK_LOST"), "another system's code");
});

test("every idempotency error code has a 4xx/5xx status, a message, and round-trips through is()", () => {
  for (const code of Object.keys(idempotencyErrors.specs) as IdempotencyErrorCode[]) {
    const error = idempotencyErrors.create(code, { fields: { probe: 1 } });
    assert.ok(error instanceof CasebookError);
    assert.equal(error.status, idempotencyErrors.specs[code].status);
    assert.ok(error.message.length > 20, code);
    assert.ok(idempotencyErrors.is(error, code));
  }
  assert.equal(idempotencyErrors.specs.TEST_IDEMPOTENCY_IN_PROGRESS.status, 409);
  assert.equal(idempotencyErrors.specs.TEST_IDEMPOTENCY_MISMATCH.status, 422);
});

test("an idempotency key is 1..255 visible ASCII characters", () => {
  assert.equal(keyError("3f1c2a8e-6b1d-4c55-9d1e-2f3a4b5c6d7e"), "accepted");
  assert.equal(keyError("k".repeat(IDEMPOTENCY_KEY_MAX_LENGTH)), "accepted");
  assert.equal(keyError("!~"), "accepted");
  assert.equal(keyError(undefined), "missing");
  assert.equal(keyError(""), "missing");
  assert.equal(keyError(["a", "b"]), "missing"); // a repeated header arrives as an array
  assert.match(keyError("k".repeat(IDEMPOTENCY_KEY_MAX_LENGTH + 1)), /longer than 255/);
  assert.match(keyError("has space"), /visible ASCII/);
  assert.match(keyError("tab\t"), /visible ASCII/);
  assert.match(keyError("chavé"), /visible ASCII/);
});

test("canonical JSON sorts object keys at every depth and keeps array order", () => {
  assert.equal(canonicalJson({ b: [2, 1], a: { d: null, c: "x" } }), '{"a":{"c":"x","d":null},"b":[2,1]}');
  assert.equal(canonicalJson({ b: 1, a: 2 }), canonicalJson({ a: 2, b: 1 }));
  assert.notEqual(canonicalJson([1, 2]), canonicalJson([2, 1]));
  assert.equal(canonicalJson({ a: undefined, b: true }), '{"b":true}');
  assert.equal(canonicalJson("é\u2028"), JSON.stringify("é\u2028"));
  assert.throws(() => canonicalJson({ n: Number.NaN }), TypeError);
  assert.throws(() => canonicalJson({ n: 1n }), TypeError);
  let deep: unknown = 1;
  for (let i = 0; i <= CANONICAL_MAX_DEPTH; i++) deep = [deep];
  assert.throws(() => canonicalJson(deep), RangeError);
});

test("the fingerprint covers method, path and canonical body, and names what differs", () => {
  const reordered = fingerprintRequest({
    method: "post",
    path: "/payments",
    body: { currency: "BRL", amount: "5000" },
  });
  assert.deepEqual(reordered, PAYMENT);
  assert.equal(fingerprintDigest(reordered), fingerprintDigest(PAYMENT));
  assert.match(PAYMENT.bodySha256, /^[0-9a-f]{64}$/);
  const other = fingerprintRequest({
    method: "PUT",
    path: "/refunds",
    body: { amount: "4900", currency: "BRL" },
  });
  assert.deepEqual(mismatchedParts(PAYMENT, other), ["method", "path", "body"]);
  assert.deepEqual(mismatchedParts(PAYMENT, { ...PAYMENT, path: "/payments/" }), ["path"]);
  assert.notEqual(fingerprintDigest(PAYMENT), fingerprintDigest({ ...PAYMENT, path: "/payments/" }));
  const noBody = fingerprintRequest({ method: "POST", path: "/payments" });
  assert.notEqual(
    noBody.bodySha256,
    fingerprintRequest({ method: "POST", path: "/payments", body: null }).bodySha256,
  );
  assert.throws(() => fingerprintRequest({ method: "PO ST", path: "/x" }), TypeError);
  assert.throws(() => fingerprintRequest({ method: "POST", path: "payments" }), TypeError);
});

function entry(overrides: Partial<ExistingEntry>): ExistingEntry {
  return {
    fingerprint: PAYMENT,
    status: "in_progress",
    recoveryPoint: RECOVERY_STARTED,
    lockedAtMs: 1_000,
    createdAtMs: 1_000,
    response: undefined,
    ...overrides,
  };
}

test("decideExisting: expired, then mismatch, then replay, then a live claim, then take-over", () => {
  const response = { status: 201, headers: {}, body: new Uint8Array([1]) };
  const completed = entry({
    status: "completed",
    lockedAtMs: null,
    response,
    recoveryPoint: RECOVERY_FINISHED,
  });
  const other = { ...PAYMENT, bodySha256: "0".repeat(64) };
  const at = (nowMs: number, fingerprint = PAYMENT) => ({ fingerprint, nowMs });
  assert.deepEqual(decideExisting(completed, at(1_000 + POLICY.retentionMs), POLICY), { kind: "expired" });
  assert.deepEqual(decideExisting(completed, at(999 + POLICY.retentionMs, other), POLICY), {
    kind: "mismatch",
    parts: ["body"],
  });
  assert.deepEqual(decideExisting(entry({}), at(2_000, other), POLICY).kind, "mismatch");
  assert.deepEqual(decideExisting(completed, at(5_000), POLICY), { kind: "replay", response });
  assert.deepEqual(decideExisting(entry({}), at(2_000), POLICY), {
    kind: "in_progress",
    retryAfterMs: 59_000,
  });
  assert.deepEqual(decideExisting(entry({}), at(60_999), POLICY), { kind: "in_progress", retryAfterMs: 1 });
  assert.deepEqual(decideExisting(entry({ recoveryPoint: "reserved" }), at(61_000), POLICY), {
    kind: "take_over",
    recoveryPoint: "reserved",
  });
  assert.deepEqual(
    decideExisting(entry({ lockedAtMs: null, recoveryPoint: "authorized" }), at(1_001), POLICY),
    {
      kind: "take_over",
      recoveryPoint: "authorized",
    },
  );
  assert.throws(() => decideExisting(entry({ status: "completed" }), at(2_000), POLICY), /invariant/);
});

test("checkAdvance accepts saga steps and refuses the start, the finish and steps after finishing", () => {
  assert.equal(checkAdvance(RECOVERY_STARTED, "ledger_reserved"), "ledger_reserved");
  assert.equal(checkAdvance("ledger_reserved", "acquirer_authorized"), "acquirer_authorized");
  assert.throws(() => checkAdvance("ledger_reserved", RECOVERY_STARTED), RangeError);
  assert.throws(() => checkAdvance("ledger_reserved", RECOVERY_FINISHED), RangeError);
  assert.throws(() => checkAdvance(RECOVERY_FINISHED, "refunded"), RangeError);
  assert.throws(() => checkAdvance(RECOVERY_STARTED, "Bad Step"), TypeError);
});

test("only the allowed headers are kept for replay, names lower-cased", () => {
  const headers = {
    "Content-Type": "application/json",
    Location: "/payments/p1",
    "X-Request-Id": "r1",
    date: "x",
  };
  assert.deepEqual(selectReplayHeaders(headers), {
    "content-type": "application/json",
    location: "/payments/p1",
  });
  assert.deepEqual(selectReplayHeaders(headers, ["X-REQUEST-ID"]), { "x-request-id": "r1" });
});

test("a stored response needs an HTTP status, lower-case headers and a body within its bound", () => {
  const ok = { status: 201, headers: { "content-type": "application/json" }, body: new Uint8Array(3) };
  assert.equal(checkStoredResponse(ok, testIdempotency), ok);
  assert.throws(() => checkStoredResponse({ ...ok, status: 99 }, testIdempotency), RangeError);
  assert.throws(
    () => checkStoredResponse({ ...ok, headers: { "Content-Type": "x" } }, testIdempotency),
    TypeError,
  );
  const large = { ...ok, body: new Uint8Array(RESPONSE_BODY_MAX_BYTES + 1) };
  assert.throws(
    () => checkStoredResponse(large, testIdempotency),
    (err) => idempotencyErrors.is(err, "TEST_IDEMPOTENCY_RESPONSE_TOO_LARGE"),
  );
});

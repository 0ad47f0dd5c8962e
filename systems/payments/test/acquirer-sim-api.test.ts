import assert from "node:assert/strict";
import { test } from "node:test";
import { REPLAYED_HEADER } from "../src/sim/acquirer-routes.ts";
import { authorization, startSim } from "./acquirer-sim-fixture.ts";

function fieldsOf(body: Record<string, unknown>): string[] {
  return ((body.errors as { field: string }[] | undefined) ?? []).map((e) => e.field);
}

test("same idempotency key twice over HTTP: byte-identical answer, one charge, attempts 2", async (t) => {
  const { call } = await startSim(t);
  const body = authorization({ idempotencyKey: "order-1" });
  const first = await call("POST", "/v1/authorizations", body);
  const second = await call("POST", "/v1/authorizations", { ...body, amountMinor: 5000 }); // number = same amount
  assert.equal(first.status, 200);
  assert.equal(first.body.outcome, "approved");
  assert.equal(second.status, 200);
  assert.equal(second.text, first.text);
  assert.equal(first.headers.get(REPLAYED_HEADER), null);
  assert.equal(second.headers.get(REPLAYED_HEADER), "true");
  const byKey = await call("GET", "/v1/authorizations/by-key/order-1");
  assert.equal(byKey.body.id, first.body.id);
  assert.equal(byKey.body.attempts, 2);
  const stats = await call("GET", "/v1/stats");
  assert.equal(stats.body.authorizations, 1);
  assert.equal(stats.body.authorizationAttempts, 2);
});

test("20 concurrent calls with one key: one authorization, every caller gets the same answer", async (t) => {
  const { call } = await startSim(t);
  const body = authorization({ idempotencyKey: "race-1" });
  const answers = await Promise.all(
    Array.from({ length: 20 }, () => call("POST", "/v1/authorizations", body)),
  );
  assert.ok(answers.every((a) => a.status === 200 && a.text === answers[0]!.text));
  const stats = await call("GET", "/v1/stats");
  assert.equal(stats.body.authorizations, 1);
  assert.equal((await call("GET", "/v1/authorizations/by-key/race-1")).body.attempts, 20);
});

test("the same key with another amount is a 422 naming /body/amountMinor, and charges nothing", async (t) => {
  const { call } = await startSim(t);
  const body = authorization({ idempotencyKey: "order-2" });
  await call("POST", "/v1/authorizations", body);
  const res = await call("POST", "/v1/authorizations", { ...body, amountMinor: "5001" });
  assert.equal(res.status, 422);
  assert.equal(res.body.code, "ACQUIRER_IDEMPOTENCY_MISMATCH");
  assert.deepEqual(fieldsOf(res.body), ["/body/amountMinor"]);
  assert.match(res.headers.get("content-type") ?? "", /application\/problem\+json/);
  assert.equal((await call("GET", "/v1/stats")).body.authorizations, 1);
});

test("bad input gets a 400 naming the field: amount, currency, unknown field, missing key", async (t) => {
  const { call } = await startSim(t);
  const cases: [Record<string, unknown>, string][] = [
    [authorization({ amountMinor: 12.5 }), "/body/amountMinor"],
    [authorization({ amountMinor: "0" }), "/body/amountMinor"],
    [authorization({ amountMinor: "-5" }), "/body/amountMinor"],
    [authorization({ currency: "real" }), "/body/currency"],
    [authorization({ currency: "XYZ" }), "/body/currency"],
    [authorization({ currency: "XAU" }), "/body/currency"],
    [{ ...authorization(), tip: 1 }, "/body/tip"],
    [{ merchantId: "m", amountMinor: "1", currency: "BRL", cardToken: "t" }, "/body/idempotencyKey"],
  ];
  for (const [body, field] of cases) {
    const res = await call("POST", "/v1/authorizations", body);
    assert.equal(res.status, 400, JSON.stringify(body));
    assert.equal(res.body.code, "REQUEST_INVALID");
    assert.ok(fieldsOf(res.body).includes(field), `${field} in ${JSON.stringify(res.body.errors)}`);
  }
  assert.equal((await call("GET", "/v1/stats")).body.authorizationAttempts, 0);
});

test("amounts beyond 2^53 travel as strings without losing a cent", async (t) => {
  const { call } = await startSim(t);
  const res = await call("POST", "/v1/authorizations", authorization({ amountMinor: "900719925474099312" }));
  assert.equal(res.body.amountMinor, "900719925474099312");
  const captured = await call("POST", `/v1/authorizations/${res.body.id}/capture`, {});
  assert.equal(captured.body.capturedMinor, "900719925474099312");
});

test("capture, void and refund rules answer 4xx problems naming the field at fault", async (t) => {
  const { call } = await startSim(t);
  const { body: auth } = await call("POST", "/v1/authorizations", authorization({ amountMinor: "5000" }));
  const base = `/v1/authorizations/${auth.id}`;
  const over = await call("POST", `${base}/capture`, { amountMinor: "5001" });
  assert.equal(over.status, 422);
  assert.equal(over.body.code, "ACQUIRER_CAPTURE_EXCEEDS_AUTHORIZED");
  assert.equal(over.body.authorizedMinor, "5000");
  assert.deepEqual(fieldsOf(over.body), ["/body/amountMinor"]);
  const refundEarly = await call("POST", `${base}/refunds`, { idempotencyKey: "rf-0", amountMinor: 1 });
  assert.equal(refundEarly.status, 409);
  assert.equal(refundEarly.body.code, "ACQUIRER_NOT_CAPTURED");
  const captured = await call("POST", `${base}/capture`, { amountMinor: 4000 });
  assert.equal(captured.status, 200);
  assert.equal(captured.body.status, "captured");
  assert.equal(captured.body.capturedMinor, "4000");
  assert.equal((await call("POST", `${base}/void`)).body.code, "ACQUIRER_ALREADY_CAPTURED");
  const r1 = await call("POST", `${base}/refunds`, { idempotencyKey: "rf-1", amountMinor: "1500" });
  assert.equal(r1.status, 200);
  const r1again = await call("POST", `${base}/refunds`, { idempotencyKey: "rf-1", amountMinor: "1500" });
  assert.equal(r1again.text, r1.text);
  assert.equal(r1again.headers.get(REPLAYED_HEADER), "true");
  const tooMuch = await call("POST", `${base}/refunds`, { idempotencyKey: "rf-2", amountMinor: "2501" });
  assert.equal(tooMuch.status, 422);
  assert.equal(tooMuch.body.code, "ACQUIRER_REFUND_EXCEEDS_CAPTURED");
  assert.equal(tooMuch.body.refundableMinor, "2500");
  assert.deepEqual(fieldsOf(tooMuch.body), ["/body/amountMinor"]);
  const missingKey = await call("POST", `${base}/refunds`, { amountMinor: "1" });
  assert.deepEqual(fieldsOf(missingKey.body), ["/body/idempotencyKey"]);
  const view = await call("GET", base);
  assert.equal(view.body.refundedMinor, "1500");
  assert.equal((view.body.refunds as unknown[]).length, 1);
});

test("void before capture; a voided or unknown authorization cannot be captured", async (t) => {
  const { call } = await startSim(t);
  const { body: auth } = await call("POST", "/v1/authorizations", authorization());
  const voided = await call("POST", `/v1/authorizations/${auth.id}/void`);
  assert.equal(voided.body.status, "voided");
  assert.equal(
    (await call("POST", `/v1/authorizations/${auth.id}/void`)).headers.get(REPLAYED_HEADER),
    "true",
  );
  assert.equal(
    (await call("POST", `/v1/authorizations/${auth.id}/capture`, {})).body.code,
    "ACQUIRER_AUTHORIZATION_VOIDED",
  );
  const unknown = await call("POST", "/v1/authorizations/auth_nope/capture", {});
  assert.equal(unknown.status, 404);
  assert.equal(unknown.body.code, "ACQUIRER_AUTHORIZATION_NOT_FOUND");
  assert.equal((await call("GET", "/v1/authorizations/by-key/never-sent")).status, 404);
});

test("a seeded decline rate gives the same outcomes on every run, and a decline is an answer, not an error", async (t) => {
  const run = async () => {
    const { call } = await startSim(t, { behaviour: { declineRate: 0.5 } });
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await call("POST", "/v1/authorizations", authorization({ idempotencyKey: `d-${i}` }));
      assert.equal(res.status, 200);
      outcomes.push(`${res.body.outcome}:${res.body.declineReason}`);
    }
    return outcomes;
  };
  const first = await run();
  assert.deepEqual(await run(), first);
  assert.ok(
    first.some((o) => o.startsWith("declined:")) && first.some((o) => o === "approved:null"),
    first.join(),
  );
});

test("maxPayments: a new key past the bound gets 507; POST /admin/reset starts over", async (t) => {
  const { call } = await startSim(t, { maxPayments: 2 });
  await call("POST", "/v1/authorizations", authorization());
  await call("POST", "/v1/authorizations", authorization());
  const full = await call("POST", "/v1/authorizations", authorization());
  assert.equal(full.status, 507);
  assert.equal(full.body.code, "ACQUIRER_CAPACITY_REACHED");
  assert.deepEqual(await (await call("POST", "/admin/reset")).body, { reset: true });
  assert.equal((await call("POST", "/v1/authorizations", authorization())).status, 200);
  assert.equal((await call("GET", "/v1/stats")).body.authorizations, 1);
});

test("per-merchant rate: the call past merchantRatePerS in one second gets 429 with Retry-After", async (t) => {
  const { call, clock } = await startSim(t);
  await call("PUT", "/admin/behaviour", { merchantRatePerS: 1 });
  assert.equal((await call("POST", "/v1/authorizations", authorization())).status, 200);
  const limited = await call("POST", "/v1/authorizations", authorization());
  assert.equal(limited.status, 429);
  assert.equal(limited.body.code, "ACQUIRER_RATE_LIMITED");
  assert.equal(limited.headers.get("retry-after"), "1");
  clock.advance(1_000);
  assert.equal((await call("POST", "/v1/authorizations", authorization())).status, 200);
});

test("the service base answers: healthz, readyz, metrics with the simulator's gauge, openapi with its routes", async (t) => {
  const { call, url } = await startSim(t);
  await call("POST", "/v1/authorizations", authorization());
  assert.equal((await call("GET", "/healthz")).status, 200);
  assert.equal((await call("GET", "/readyz")).status, 200);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /acquirer_sim_operations\{kind="authorizations"\} 1/);
  const openapi = (await call("GET", "/openapi.json")).body as { paths: Record<string, unknown> };
  for (const path of ["/v1/authorizations", "/v1/authorizations/by-key/{key}", "/admin/behaviour"]) {
    assert.ok(path in openapi.paths, `${path} in ${Object.keys(openapi.paths).join()}`);
  }
});

test("with an admin token, /admin needs it (401 otherwise) while /v1 stays open", async (t) => {
  const { call } = await startSim(t, { adminToken: "s3cret-token" });
  assert.equal((await call("POST", "/admin/reset")).body.code, "AUTH_MISSING");
  const wrong = await call("POST", "/admin/reset", undefined, { headers: { authorization: "Bearer nope" } });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.code, "AUTH_INVALID");
  const right = await call("POST", "/admin/reset", undefined, {
    headers: { authorization: "Bearer s3cret-token" },
  });
  assert.equal(right.status, 200);
  assert.equal((await call("POST", "/v1/authorizations", authorization())).status, 200);
});

import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { test } from "node:test";
import { createAcquirerSim } from "../src/sim/acquirer-sim.ts";
import { authorization, startSim } from "./acquirer-sim-fixture.ts";

/** How long the "client" waits in these tests: the server holds a lost response far longer (hangMs). */
const clientTimeoutMs = 200;

test("timeout after charge (hang): the client times out, the status query by key shows the charge, the retry replays it", async (t) => {
  const { call, url } = await startSim(t, { behaviour: { hangMs: 600_000 } });
  await call("PUT", "/admin/behaviour", { timeoutAfterChargeRate: 1, timeoutMode: "hang" });
  const body = authorization({ idempotencyKey: "lost-1" });
  await assert.rejects(
    fetch(`${url}/v1/authorizations`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(clientTimeoutMs),
    }),
    { name: "TimeoutError" },
  );
  // PY-06's move: ask by key before deciding. The charge happened although no answer arrived.
  const status = await call("GET", "/v1/authorizations/by-key/lost-1");
  assert.equal(status.status, 200);
  assert.equal(status.body.outcome, "approved");
  assert.equal(status.body.attempts, 1);
  await call("PUT", "/admin/behaviour", { timeoutAfterChargeRate: 0 });
  const retry = await call("POST", "/v1/authorizations", body);
  assert.equal(retry.body.id, status.body.id);
  const stats = await call("GET", "/v1/stats");
  assert.equal(stats.body.authorizations, 1, "one charge");
  assert.equal(stats.body.authorizationAttempts, 2);
  assert.equal((stats.body.faults as { responsesLost: number }).responsesLost, 1);
});

test("timeout after charge (reset): the connection drops after the charge; by-key shows it", async (t) => {
  const { call, url } = await startSim(t);
  await call("PUT", "/admin/behaviour", { timeoutAfterChargeRate: 1, timeoutMode: "reset" });
  const body = authorization({ idempotencyKey: "reset-1" });
  await assert.rejects(
    fetch(`${url}/v1/authorizations`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
    TypeError, // undici: "fetch failed", caused by the socket closing without a response
  );
  const status = await call("GET", "/v1/authorizations/by-key/reset-1");
  assert.equal(status.body.status, "approved");
  assert.equal((await call("GET", "/v1/stats")).body.authorizations, 1);
});

test("a refund whose response is lost is done once: the view shows it, the retry with its key replays", async (t) => {
  const { call } = await startSim(t);
  const { body: auth } = await call("POST", "/v1/authorizations", authorization());
  await call("POST", `/v1/authorizations/${auth.id}/capture`, {});
  await call("PUT", "/admin/behaviour", { timeoutAfterChargeRate: 1, timeoutMode: "reset" });
  await assert.rejects(
    call("POST", `/v1/authorizations/${auth.id}/refunds`, { idempotencyKey: "rf-lost", amountMinor: "700" }),
  );
  await call("PUT", "/admin/behaviour", { timeoutAfterChargeRate: 0 });
  const view = await call("GET", `/v1/authorizations/${auth.id}`);
  assert.equal(view.body.refundedMinor, "700");
  const retry = await call("POST", `/v1/authorizations/${auth.id}/refunds`, {
    idempotencyKey: "rf-lost",
    amountMinor: "700",
  });
  assert.equal(retry.status, 200);
  assert.equal((await call("GET", `/v1/authorizations/${auth.id}`)).body.refundedMinor, "700");
  assert.equal((await call("GET", "/v1/stats")).body.refunds, 1);
});

test("close() cuts a socket held by a lost response instead of waiting for it", {
  timeout: 5_000,
}, async (t) => {
  const { call, url, sim } = await startSim(t, { behaviour: { hangMs: 600_000 } });
  await call("PUT", "/admin/behaviour", { timeoutAfterChargeRate: 1 });
  const { port } = new URL(url);
  const hung = new Promise<string>((resolve) => {
    const req = httpRequest({ host: "127.0.0.1", port, method: "POST", path: "/v1/authorizations" }, () =>
      resolve("answered"),
    );
    req.on("error", (error) => resolve((error as NodeJS.ErrnoException).code ?? error.message));
    req.setHeader("content-type", "application/json");
    req.end(JSON.stringify(authorization()));
  });
  // Wait for the event, not for time: the charge is recorded before the response is withheld.
  for (let i = 0; i < 200 && sim.faults.counters().heldSockets === 0; i++)
    await new Promise((r) => setImmediate(r));
  assert.equal(sim.faults.counters().heldSockets, 1);
  await sim.close();
  assert.equal(await hung, "ECONNRESET");
  assert.equal(sim.state.stats().authorizations, 1);
});

test("outage (refuse): every /v1 call gets 503 ACQUIRER_OUTAGE with Retry-After, nothing is charged, admin still works", async (t) => {
  const { call } = await startSim(t);
  const before = await call("POST", "/v1/authorizations", authorization({ idempotencyKey: "pre-outage" }));
  await call("PUT", "/admin/behaviour", { outage: true });
  const refused = await call("POST", "/v1/authorizations", authorization());
  assert.equal(refused.status, 503);
  assert.equal(refused.body.code, "ACQUIRER_OUTAGE");
  assert.equal(refused.headers.get("retry-after"), "1");
  assert.equal(
    (await call("POST", "/v1/authorizations", { junk: true })).status,
    503,
    "refused before validation",
  );
  assert.equal((await call("GET", "/v1/authorizations/by-key/pre-outage")).status, 503, "status queries too");
  const stats = await call("GET", "/v1/stats");
  assert.equal(stats.body.authorizations, 1);
  assert.equal((stats.body.faults as { outageRefusals: number }).outageRefusals, 3);
  assert.equal((await call("GET", "/healthz")).status, 200);
  await call("PUT", "/admin/behaviour", { outage: false });
  assert.equal((await call("GET", "/v1/authorizations/by-key/pre-outage")).body.id, before.body.id);
});

test("outage (reset): connections are reset without an answer", async (t) => {
  const { call } = await startSim(t);
  await call("PUT", "/admin/behaviour", { outage: true, outageMode: "reset" });
  await assert.rejects(call("POST", "/v1/authorizations", authorization()), TypeError);
  const stats = await call("GET", "/v1/stats");
  assert.equal(stats.body.authorizations, 0);
  assert.equal((stats.body.faults as { connectionResets: number }).connectionResets, 1);
});

test("errorRate: 500/502/503 problems before processing, so nothing is charged and the retry charges once", async (t) => {
  const { call } = await startSim(t);
  await call("PUT", "/admin/behaviour", { errorRate: 1 });
  const body = authorization({ idempotencyKey: "flaky-1" });
  const codes = new Set<string>();
  for (let i = 0; i < 12; i++) {
    const res = await call("POST", "/v1/authorizations", body);
    assert.ok([500, 502, 503].includes(res.status), String(res.status));
    codes.add(String(res.body.code));
  }
  assert.deepEqual([...codes].sort(), [
    "ACQUIRER_INTERNAL_FAILURE",
    "ACQUIRER_OVERLOADED",
    "ACQUIRER_UPSTREAM_FAILED",
  ]);
  assert.equal((await call("GET", "/v1/stats")).body.authorizations, 0);
  await call("PUT", "/admin/behaviour", { errorRate: 0 });
  assert.equal((await call("POST", "/v1/authorizations", body)).status, 200);
  assert.equal((await call("GET", "/v1/authorizations/by-key/flaky-1")).body.attempts, 1);
});

test("latency: latencyMs plus seeded jitter before every /v1 call (observed through the injected sleep)", async (t) => {
  const observe = async () => {
    const delays: number[] = [];
    const { call } = await startSim(t, {
      behaviour: { latencyMs: 40, latencyJitterMs: 10 },
      sleep: async (ms) => void delays.push(ms),
    });
    for (let i = 0; i < 10; i++) await call("POST", "/v1/authorizations", authorization());
    await call("GET", "/admin/behaviour"); // admin calls are never delayed
    return delays;
  };
  const delays = await observe();
  assert.equal(delays.length, 10);
  assert.ok(
    delays.every((ms) => ms >= 40 && ms <= 50),
    delays.join(),
  );
  assert.ok(new Set(delays).size > 1, "jitter varies");
  assert.deepEqual(await observe(), delays);
});

test("PUT /admin/behaviour refuses an out-of-range knob naming it, and reset restores the starting knobs", async (t) => {
  const { call } = await startSim(t, { behaviour: { declineRate: 0.1 } });
  const bad = await call("PUT", "/admin/behaviour", { errorRate: 2 });
  assert.equal(bad.status, 400);
  assert.equal((bad.body.errors as { field: string }[])[0]?.field, "/body/errorRate");
  const unknown = await call("PUT", "/admin/behaviour", { chaos: true });
  assert.equal((unknown.body.errors as { field: string }[])[0]?.field, "/body/chaos");
  assert.equal((await call("PUT", "/admin/behaviour", { outage: true, declineRate: 0.9 })).body.outage, true);
  await call("POST", "/admin/reset");
  const knobs = (await call("GET", "/admin/behaviour")).body;
  assert.equal(knobs.outage, false);
  assert.equal(knobs.declineRate, 0.1);
});

test("a call delayed by latencyMs with the real timer still answers (the delay is not cut by the request's own close)", async () => {
  const sim = createAcquirerSim({
    behaviour: { latencyMs: 20 },
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const { url } = await sim.listen({ port: 0 });
  try {
    const response = await fetch(`${url}/v1/authorizations`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        idempotencyKey: "latency-1",
        merchantId: "m",
        amountMinor: "100",
        currency: "USD",
        cardToken: "tok_visa",
      }),
    });
    assert.equal(response.status, 200, await response.text());
    assert.equal(sim.faults.counters().delayedCalls, 1);
  } finally {
    await sim.close();
  }
});

/**
 * WH-16 through HTTP, on PGlite and PostgreSQL: a subscription shows its endpoint's health
 * (`status`, `statusReason`, `failingSince`, `clientErrors`, `clientErrorsSince`) as the
 * worker's writes change it (store/endpoint-health.ts, driven here directly); a switch-off
 * by the system leaves a `webhook.subscription.*` event the tenant can read and receive;
 * the tenant's own switch brings the endpoint back with a clean slate. The worker's side
 * (which results count, when they persist) is worker-faults' and the domain tests'.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import {
  recordEndpointHealth,
  SUBSCRIPTION_EVENT_TYPES,
  switchOffSubscription,
} from "../src/store/endpoint-health.ts";
import { type ApiWorld, apiBackends } from "./api-fixture.ts";

async function subscribed(s: ApiWorld) {
  const t = await s.tenant();
  const sub = await s.request("POST", "/v1/subscriptions", {
    key: t.key,
    body: { url: "https://hooks.example.com/in" },
  });
  assert.equal(sub.status, 201);
  return { ...t, subscriptionId: sub.body.id as string, created: sub.body };
}

contractSuite("API subscription status", apiBackends("wh_api_sub_status"), (it) => {
  it("WH-16 a new endpoint is active; failures make it failing with a reason and a start; a 2xx makes it active again", async (s) => {
    const t = await subscribed(s);
    assert.deepEqual(
      [t.created.status, t.created.statusReason, t.created.failingSince, t.created.clientErrors],
      ["active", null, null, 0],
    );
    const at = (ms: number) => new Date(ms).toISOString();
    const base = { tenantId: t.id, subscriptionId: t.subscriptionId };
    const t0 = s.clock.nowMs();
    await recordEndpointHealth(s.db, {
      ...base,
      signal: "transient_error",
      reason: "dns_error: ENOTFOUND",
      nowMs: t0,
    });
    await recordEndpointHealth(s.db, {
      ...base,
      signal: "transient_error",
      reason: "5xx 503",
      nowMs: t0 + 1_000,
    });
    let view = (await s.request("GET", `/v1/subscriptions/${t.subscriptionId}`, { key: t.key })).body;
    assert.deepEqual(
      [view.status, view.active, view.statusReason, view.failingSince, view.clientErrors],
      ["failing", true, "dns_error: ENOTFOUND", at(t0), 0],
      "failing since the first failure, with its reason",
    );
    const streak = await recordEndpointHealth(s.db, {
      ...base,
      signal: "client_error",
      reason: "4xx 404",
      nowMs: t0 + 2_000,
    });
    assert.deepEqual(streak, { clientErrors: 1, clientErrorsSinceMs: t0 + 2_000 });
    view = (await s.request("GET", `/v1/subscriptions/${t.subscriptionId}`, { key: t.key })).body;
    assert.deepEqual(
      [view.status, view.statusReason, view.failingSince, view.clientErrors, view.clientErrorsSince],
      ["failing", "4xx 404", at(t0), 1, at(t0 + 2_000)],
    );
    // A transient failure ends the client-error streak; a 2xx ends the failing run.
    await recordEndpointHealth(s.db, {
      ...base,
      signal: "transient_error",
      reason: "timeout_connect",
      nowMs: t0 + 3_000,
    });
    await recordEndpointHealth(s.db, { ...base, signal: "success", reason: "2xx", nowMs: t0 + 4_000 });
    view = (await s.request("GET", `/v1/subscriptions/${t.subscriptionId}`, { key: t.key })).body;
    assert.deepEqual(
      [view.status, view.statusReason, view.failingSince, view.clientErrors, view.clientErrorsSince],
      ["active", null, null, 0, null],
    );
  });

  it("WH-16 quarantine by the system: status quarantined, one webhook.subscription.quarantined event; the tenant's PATCH active:true starts clean", async (s) => {
    const t = await subscribed(s);
    const base = { tenantId: t.id, subscriptionId: t.subscriptionId, randomBytes: s.randomBytes };
    for (let i = 0; i < 5; i++)
      await recordEndpointHealth(s.db, {
        ...base,
        signal: "client_error",
        reason: "4xx 403",
        nowMs: s.clock.nowMs(),
      });
    const off = {
      ...base,
      status: "quarantined" as const,
      reason: "quarantined: 5 client errors in a row over 3600 s (last: 4xx)",
    };
    const eventId = await switchOffSubscription(s.db, { ...off, nowMs: s.clock.nowMs() });
    assert.match(eventId ?? "", /^msg_/);
    assert.equal(
      await switchOffSubscription(s.db, { ...off, nowMs: s.clock.nowMs() }),
      undefined,
      "told once",
    );
    const view = (await s.request("GET", `/v1/subscriptions/${t.subscriptionId}`, { key: t.key })).body;
    assert.deepEqual(
      [view.status, view.active, view.statusReason, view.disabledReason, view.clientErrors],
      ["quarantined", false, off.reason, off.reason, 5],
    );
    const event = (await s.request("GET", `/v1/events/${eventId}`, { key: t.key })).body;
    assert.equal(event.type, SUBSCRIPTION_EVENT_TYPES.quarantined);
    assert.equal(event.payload.subscriptionId, t.subscriptionId);
    assert.equal(event.payload.status, "quarantined");
    assert.equal(event.payload.clientErrors, 5);
    const patched = await s.request("PATCH", `/v1/subscriptions/${t.subscriptionId}`, {
      key: t.key,
      body: { active: true },
    });
    assert.deepEqual(
      [patched.body.status, patched.body.active, patched.body.statusReason, patched.body.clientErrors],
      ["active", true, null, 0],
    );
    const deleted = await s.request("DELETE", `/v1/subscriptions/${t.subscriptionId}`, { key: t.key });
    assert.equal(deleted.status, 204);
    const gone = (await s.request("GET", `/v1/subscriptions/${t.subscriptionId}`, { key: t.key })).body;
    assert.deepEqual([gone.status, gone.statusReason], ["disabled", "deleted by the tenant"]);
  });

  it("a tenant cannot send an event under the system's reserved `webhook.` types", async (s) => {
    const t = await subscribed(s);
    const res = await s.request("POST", "/v1/events", {
      key: t.key,
      body: { type: SUBSCRIPTION_EVENT_TYPES.disabled, payload: {} },
    });
    assert.equal(res.status, 400);
    assert.ok(
      (res.body.errors as { field: string }[]).some((e) => e.field === "/body/type"),
      JSON.stringify(res.body),
    );
  });
});

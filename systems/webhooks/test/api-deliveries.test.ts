/**
 * Events in, deliveries out, through HTTP on PGlite and PostgreSQL: idempotent ingest
 * (the same Idempotency-Key is the same event, written once), the delivery log with cursor
 * pagination and filters, attempts, replay with stable ids, replay refused once the
 * payload passed retention (WH-22), and a deleted subscription's queued delivery never sent
 * (WH-04). The relay, dispatcher and sweeper run on the test's manual clock; a fixture
 * plays the worker's part (claim, record one attempt).
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { loadForSend } from "../src/store/send-check.ts";
import { RetentionSweeper } from "../src/workers/retention-sweeper.ts";
import { type ApiWorld, apiBackends, assertProblem, type Json, tableCounts } from "./api-fixture.ts";
import { claim, DAY_MS } from "./store-fixture.ts";

async function subscribed(s: ApiWorld, body: Record<string, unknown> = {}) {
  const t = await s.tenant();
  const sub = await s.request("POST", "/v1/subscriptions", {
    key: t.key,
    body: { url: "https://hooks.example.com/in", ...body },
  });
  assert.equal(sub.status, 201);
  return { ...t, subscriptionId: sub.body.id as string };
}

function post(s: ApiWorld, key: string, payload: object, headers: Record<string, string> = {}) {
  return s.request("POST", "/v1/events", { key, body: { type: "invoice.paid", payload }, headers });
}

contractSuite("API events and deliveries", apiBackends("wh_api_deliveries"), (it) => {
  it("the same Idempotency-Key returns the same event id and writes one event; another payload under it is 409", async (s) => {
    const { key } = await subscribed(s);
    const headers = { "idempotency-key": "order-42:paid" };
    const first = await post(s, key, { order: 42 }, headers);
    assert.equal(first.status, 202);
    assert.equal(first.body.duplicate, false);
    assert.match(first.body.id, /^msg_[0-9a-f]{32}$/);
    assert.equal(first.headers.location, `/v1/events/${first.body.id}`);
    const before = await tableCounts(s.db);
    const again = await post(s, key, { order: 42 }, headers);
    assert.equal(again.status, 202);
    assert.deepEqual([again.body.id, again.body.duplicate], [first.body.id, true]);
    assert.deepEqual(await tableCounts(s.db), before, "the retry wrote no event and no outbox row");
    const conflict = assertProblem(
      await post(s, key, { order: 43 }, headers),
      409,
      "WEBHOOK_IDEMPOTENCY_CONFLICT",
    );
    assert.equal(conflict.eventId, first.body.id);
    const plain = await post(s, key, { order: 42 });
    assert.notEqual(plain.body.id, first.body.id, "without a key every POST is a new event");
    const got = await s.request("GET", `/v1/events/${first.body.id}`, { key });
    assert.equal(got.status, 200);
    assert.deepEqual(got.body.payload, { order: 42 });
    assert.equal(got.body.idempotencyKey, "order-42:paid");
    assert.equal(got.body.payloadExpired, false);
  });

  it("WH-02 delivery status queries: newest first, keyset pages without gaps or repeats, filters, attempts", async (s) => {
    const { key, id: tenantId, subscriptionId } = await subscribed(s);
    const other = await s.request("POST", "/v1/subscriptions", {
      key,
      body: { url: "https://other.example.com/in", eventTypes: ["refund.*"] },
    });
    const events: string[] = [];
    for (let i = 0; i < 5; i++) {
      events.push((await post(s, key, { n: i })).body.id);
      await s.fanOut(); // a delivery's created_at is its fan-out time: one instant per event here
      s.clock.advance(1);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 10; page++) {
      const url: string = `/v1/webhook-deliveries?limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const res = await s.request("GET", url, { key });
      assert.equal(res.status, 200);
      assert.ok(res.body.items.length <= 2);
      seen.push(...res.body.items.map((d: Json) => d.eventId));
      cursor = res.body.nextCursor;
      if (cursor === null) break;
    }
    assert.deepEqual(seen, [...events].reverse(), "every delivery once, newest first");
    const filtered = await s.request("GET", `/v1/webhook-deliveries?eventId=${events[2]}&state=pending`, {
      key,
    });
    assert.equal(filtered.body.items.length, 1, "refund.* filters invoice.paid out: one delivery per event");
    assert.equal(filtered.body.items[0].subscriptionId, subscriptionId);
    const none = await s.request("GET", `/v1/webhook-deliveries?subscriptionId=${other.body.id}`, { key });
    assert.deepEqual(none.body.items, []);
    await s.finishDeliveries(tenantId, "succeeded");
    const done = await s.request("GET", "/v1/webhook-deliveries?state=succeeded&limit=100", { key });
    assert.equal(done.body.items.length, 5);
    const one = done.body.items[0];
    assert.equal(one.attempts, 1);
    assert.equal(one.lastStatus, 200);
    assert.equal(one.nextAttemptAt, null, "a final delivery has no next attempt");
    const attempts = await s.request("GET", `/v1/webhook-deliveries/${one.id}/attempts`, { key });
    assert.deepEqual(
      attempts.body.items.map((a: Json) => [a.attemptNo, a.responseClass, a.status]),
      [[1, "2xx", 200]],
    );
    assert.equal(attempts.body.nextCursor, null);
  });

  it("WH-12 WH-14 replay keeps the delivery id and the webhook-id; refused while in progress or when the subscription is off", async (s) => {
    const { key, id: tenantId, subscriptionId } = await subscribed(s);
    const event = await post(s, key, { n: 1 });
    await s.fanOut();
    const [deliveryId] = await s.finishDeliveries(tenantId, "failed");
    // A client that always sends a JSON Content-Type, with no body: replay takes none, so it is accepted.
    const replayed = await s.request("POST", `/v1/webhook-deliveries/${deliveryId}/replay`, {
      key,
      headers: { "content-type": "application/json" },
    });
    assert.equal(replayed.status, 202);
    assert.deepEqual(
      [replayed.body.id, replayed.body.eventId, replayed.body.state, replayed.body.replays],
      [deliveryId, event.body.id, "pending", 1],
    );
    assertProblem(
      await s.request("POST", `/v1/webhook-deliveries/${deliveryId}/replay`, { key }),
      409,
      "WEBHOOK_DELIVERY_IN_PROGRESS",
    );
    await s.finishDeliveries(tenantId, "failed");
    const attempts = await s.request("GET", `/v1/webhook-deliveries/${deliveryId}/attempts`, { key });
    assert.deepEqual(
      attempts.body.items.map((a: Json) => a.attemptNo),
      [1, 2],
      "attempt numbers continue across the replay",
    );
    const off = await s.request("PATCH", `/v1/subscriptions/${subscriptionId}`, {
      key,
      body: { active: false, disabledReason: "maintenance" },
    });
    assert.deepEqual([off.body.active, off.body.disabledReason], [false, "maintenance"]);
    const inactive = assertProblem(
      await s.request("POST", `/v1/webhook-deliveries/${deliveryId}/replay`, { key }),
      409,
      "WEBHOOK_SUBSCRIPTION_INACTIVE",
    );
    assert.equal(inactive.reason, "maintenance");
  });

  it("WH-22 after the payload's retention: the event shows no payload, the history stays, replay is 410 with a clear problem", async (s) => {
    const { key, id: tenantId } = await subscribed(s);
    const event = await post(s, key, { card: "4242" });
    await s.fanOut();
    const [deliveryId] = await s.finishDeliveries(tenantId, "failed");
    s.clock.advance(DAY_MS);
    await new RetentionSweeper(s.db, {
      clock: s.clock,
      onError: (err) => assert.fail(String(err)),
    }).runOnce();
    const got = await s.request("GET", `/v1/events/${event.body.id}`, { key });
    assert.deepEqual([got.body.payload, got.body.payloadExpired], [null, true]);
    const view = await s.request("GET", `/v1/webhook-deliveries/${deliveryId}`, { key });
    assert.deepEqual([view.status, view.body.state, view.body.attempts], [200, "failed", 1]);
    const refused = assertProblem(
      await s.request("POST", `/v1/webhook-deliveries/${deliveryId}/replay`, { key }),
      410,
      "WEBHOOK_REPLAY_PAYLOAD_EXPIRED",
    );
    assert.match(refused.detail, /retention/);
    assert.equal(refused.payloadExpiredAt, new Date(Date.parse(got.body.createdAt) + DAY_MS).toISOString());
    const still = await s.request("GET", `/v1/webhook-deliveries/${deliveryId}`, { key });
    assert.deepEqual(
      [still.body.state, still.body.replays],
      ["failed", 0],
      "the refused replay changed nothing",
    );
  });

  it("WH-04 a subscription deleted after its delivery was queued: the worker's re-check cancels it, nothing is sent", async (s) => {
    const { key, id: tenantId, subscriptionId } = await subscribed(s);
    await post(s, key, { n: 1 });
    await s.fanOut();
    const deleted = await s.request("DELETE", `/v1/subscriptions/${subscriptionId}`, { key });
    assert.equal(deleted.status, 204);
    const [lease] = await claim(s, tenantId);
    assert.ok(lease);
    const plan = await loadForSend(s.db, lease, s.clock.nowMs());
    assert.deepEqual(plan, { send: false, reason: "subscription_inactive", settled: true });
    const view = await s.request("GET", `/v1/webhook-deliveries/${lease.deliveryId}`, { key });
    assert.deepEqual([view.body.state, view.body.attempts], ["cancelled", 0]);
    const sub = await s.request("GET", `/v1/subscriptions/${subscriptionId}`, { key });
    assert.deepEqual([sub.body.active, sub.body.disabledReason], [false, "deleted by the tenant"]);
    const after = await post(s, key, { n: 2 });
    await s.fanOut();
    const more = await s.request("GET", `/v1/webhook-deliveries?eventId=${after.body.id}`, { key });
    assert.deepEqual(more.body.items, [], "a deleted subscription gets no new deliveries");
  });
});

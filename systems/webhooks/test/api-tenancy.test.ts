/**
 * WH-12 / WH-25 through HTTP, on PGlite and PostgreSQL: with its own valid key, tenant A
 * asks for tenant B's delivery, attempts, subscription and event by their real ids — read,
 * list, replay, change, rotate, delete — and every answer is the 404 an unknown id gets
 * (never 403: the answer must not reveal that the id is someone's), and nothing of B's
 * changes. Listings show each tenant only its own rows, whatever the filters name.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { type ApiWorld, apiBackends, assertProblem, type Json } from "./api-fixture.ts";

interface TenantData {
  id: string;
  key: string;
  subscriptionId: string;
  eventId: string;
  deliveryId: string;
}

/** A tenant with one subscription, one event and its (finished, failed) delivery. */
async function tenantWithDelivery(s: ApiWorld, name: string): Promise<TenantData> {
  const { id, key } = await s.tenant(name);
  const sub = await s.request("POST", "/v1/subscriptions", {
    key,
    body: { url: `https://${name.toLowerCase()}.example.com/hooks` },
  });
  assert.equal(sub.status, 201);
  const event = await s.request("POST", "/v1/events", {
    key,
    body: { type: "invoice.paid", payload: { invoice: `${name}-1` } },
  });
  assert.equal(event.status, 202);
  await s.fanOut();
  const [deliveryId] = await s.finishDeliveries(id, "failed");
  assert.ok(deliveryId);
  return { id, key, subscriptionId: sub.body.id, eventId: event.body.id, deliveryId };
}

function unknownLike(id: string): string {
  // Same kind and shape, another random part: what "an id that does not exist" looks like.
  return `${id.slice(0, 4)}${"0".repeat(32)}`;
}

contractSuite("API tenant isolation", apiBackends("wh_api_tenancy"), (it) => {
  it("WH-12 WH-25 tenant A can neither read, list nor replay tenant B's delivery, attempts, event or subscription: 404 like an unknown id", async (s) => {
    const a = await tenantWithDelivery(s, "Alpha");
    const b = await tenantWithDelivery(s, "Beta");
    const probes: [string, string, string][] = [
      ["GET", `/v1/webhook-deliveries/${b.deliveryId}`, "WEBHOOK_DELIVERY_NOT_FOUND"],
      ["GET", `/v1/webhook-deliveries/${b.deliveryId}/attempts`, "WEBHOOK_DELIVERY_NOT_FOUND"],
      ["POST", `/v1/webhook-deliveries/${b.deliveryId}/replay`, "WEBHOOK_DELIVERY_NOT_FOUND"],
      ["GET", `/v1/events/${b.eventId}`, "WEBHOOK_EVENT_NOT_FOUND"],
      ["GET", `/v1/subscriptions/${b.subscriptionId}`, "WEBHOOK_SUBSCRIPTION_NOT_FOUND"],
    ];
    for (const [method, url, code] of probes) {
      const foreign = assertProblem(await s.request(method, url, { key: a.key }), 404, code);
      const unknown = await s.request(method, url.replace(/(dlv|msg|sub)_[0-9a-f]{32}/, unknownLike), {
        key: a.key,
      });
      assertProblem(unknown, 404, code);
      // Same status, code and wording: the answer does not tell "someone's" from "nobody's".
      assert.equal(foreign.detail, unknown.body.detail, url);
      // ...and B, with its own key, does see it.
      assert.ok((await s.request(method, url, { key: b.key })).status < 300, `${method} ${url} as B`);
    }
  });

  it("WH-12 A cannot change, rotate or delete B's subscription; B's endpoint and secret stay as they were", async (s) => {
    const a = await tenantWithDelivery(s, "Alpha");
    const b = await tenantWithDelivery(s, "Beta");
    const before = (await s.request("GET", `/v1/subscriptions/${b.subscriptionId}`, { key: b.key })).body;
    const writes: [string, string, unknown][] = [
      ["PATCH", `/v1/subscriptions/${b.subscriptionId}`, { url: "https://attacker.example.net/steal" }],
      ["PATCH", `/v1/subscriptions/${b.subscriptionId}`, { active: false }],
      ["POST", `/v1/subscriptions/${b.subscriptionId}/rotate-secret`, {}],
      ["DELETE", `/v1/subscriptions/${b.subscriptionId}`, undefined],
    ];
    for (const [method, url, body] of writes) {
      assertProblem(
        await s.request(method, url, { key: a.key, body }),
        404,
        "WEBHOOK_SUBSCRIPTION_NOT_FOUND",
      );
    }
    const after = (await s.request("GET", `/v1/subscriptions/${b.subscriptionId}`, { key: b.key })).body;
    assert.deepEqual(after, before, "B's subscription is untouched (url, active, secretVersion)");
  });

  it("WH-12 listings show only the caller's rows, even when a filter names another tenant's ids", async (s) => {
    const a = await tenantWithDelivery(s, "Alpha");
    const b = await tenantWithDelivery(s, "Beta");
    const mine = await s.request("GET", "/v1/webhook-deliveries", { key: a.key });
    assert.equal(mine.status, 200);
    assert.deepEqual(
      mine.body.items.map((d: Json) => d.id),
      [a.deliveryId],
    );
    for (const filter of [`subscriptionId=${b.subscriptionId}`, `eventId=${b.eventId}`]) {
      const res = await s.request("GET", `/v1/webhook-deliveries?${filter}`, { key: a.key });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.items, [], filter);
    }
    const subs = await s.request("GET", "/v1/subscriptions", { key: a.key });
    assert.deepEqual(
      subs.body.items.map((x: Json) => x.id),
      [a.subscriptionId],
    );
    // B's own listing, for contrast: its delivery is there.
    const theirs = await s.request("GET", `/v1/webhook-deliveries?eventId=${b.eventId}`, { key: b.key });
    assert.deepEqual(
      theirs.body.items.map((d: Json) => d.id),
      [b.deliveryId],
    );
  });

  it("WH-25 B's replay through A's key changed nothing: B's delivery is still failed, never re-queued", async (s) => {
    const a = await tenantWithDelivery(s, "Alpha");
    const b = await tenantWithDelivery(s, "Beta");
    await s.request("POST", `/v1/webhook-deliveries/${b.deliveryId}/replay`, { key: a.key });
    const view = await s.request("GET", `/v1/webhook-deliveries/${b.deliveryId}`, { key: b.key });
    assert.equal(view.body.state, "failed");
    assert.equal(view.body.replays, 0);
    const own = await s.request("POST", `/v1/webhook-deliveries/${a.deliveryId}/replay`, { key: a.key });
    assert.equal(own.status, 202, "A's replay of its own delivery works: the 404 above was about ownership");
    assert.equal(own.body.replays, 1);
  });
});

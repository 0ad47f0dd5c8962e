/**
 * The sale API end to end, in process on PGlite and the in-process stock: create (admin),
 * status, reserve, pay ("payment processing"), the hold and its order; every bad input is a
 * 4xx naming the problem and changes nothing (the stock and the holds read the same after).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { completeOrder } from "../src/store/sale-repository.ts";
import { type ApiWorld, apiWorld } from "./api-fixture.ts";

let world: ApiWorld;
before(async () => {
  world = await apiWorld();
});
after(async () => {
  await world?.close();
});

async function state(saleId: string) {
  const status = await world.request("GET", `/v1/sales/${saleId}`);
  const { rows } = await world.running.db.query("SELECT count(*)::int AS n FROM holds WHERE sale_id = $1", [
    saleId,
  ]);
  return { available: status.json.available, holds: rows[0] };
}

test("a sale is created by the admin, its status is public and cacheable for a second", async () => {
  const created = await world.request("POST", "/v1/admin/sales", {
    admin: true,
    body: { id: "concert", name: "concert", tickets: 3, perBuyerMax: 2, priceMinor: 5_000, currency: "USD" },
  });
  assert.equal(created.status, 201, JSON.stringify(created.json));
  assert.equal(created.json.available, 3);
  const again = await world.request("POST", "/v1/admin/sales", {
    admin: true,
    body: { id: "concert", name: "x", tickets: 1, priceMinor: 1, currency: "USD" },
  });
  assert.deepEqual([again.status, again.json.code], [409, "SALE_EXISTS"]);
  const anonymous = await world.request("POST", "/v1/admin/sales", {
    body: { name: "x", tickets: 1, priceMinor: 1, currency: "USD" },
  });
  assert.deepEqual([anonymous.status, anonymous.json.code], [401, "AUTH_MISSING"]);
  const status = await world.request("GET", "/v1/sales/concert");
  assert.equal(status.status, 200);
  assert.equal(status.headers["cache-control"], "public, max-age=1");
  assert.deepEqual([status.json.available, status.json.soldOut], [3, false]);
});

test("FS-08 reserve → 201 with ticket numbers; pay → 202 'payment processing'; the order shows once written", async () => {
  const saleId = await world.sale({ tickets: 2 });
  const held = await world.request("POST", `/v1/sales/${saleId}/holds`, {
    body: { buyer: "ana", quantity: 2 },
  });
  assert.equal(held.status, 201, JSON.stringify(held.json));
  assert.deepEqual([held.json.state, held.json.numbers], ["held", [1, 2]]);
  assert.equal(held.headers.location, `/v1/holds/${held.json.id}`);
  const soldOut = await world.request("POST", `/v1/sales/${saleId}/holds`, {
    body: { buyer: "bea", quantity: 1 },
  });
  assert.deepEqual([soldOut.status, soldOut.json.code], [409, "SALE_SOLD_OUT"]);
  assert.equal((await world.request("GET", `/v1/sales/${saleId}`)).json.soldOut, true);
  const paid = await world.request("POST", `/v1/holds/${held.json.id}/pay`);
  assert.equal(paid.status, 202, JSON.stringify(paid.json));
  assert.equal(paid.json.state, "charging");
  assert.match(paid.json.message, /payment processing/i);
  const twice = await world.request("POST", `/v1/holds/${held.json.id}/pay`);
  assert.deepEqual(
    [twice.status, twice.json.code, twice.json.holdState],
    [409, "HOLD_NOT_PAYABLE", "charging"],
  );
  await completeOrder(world.running.db, {
    holdId: held.json.id,
    paymentId: "pay_x",
    amountMinor: 10_000n,
    nowMs: world.clock.nowMs(),
  });
  const order = await world.request("GET", `/v1/holds/${held.json.id}`);
  assert.deepEqual(
    [order.json.state, order.json.order.paymentId, order.json.order.amountMinor],
    ["paid", "pay_x", 10_000],
  );
});

test("FS-08 a hold not paid in time: pay answers 409 HOLD_EXPIRED and the reconciler gives the tickets back", async () => {
  const saleId = await world.sale({ tickets: 1, holdTtlMs: 1_000 });
  const held = await world.request("POST", `/v1/sales/${saleId}/holds`, {
    body: { buyer: "cy", quantity: 1 },
  });
  assert.equal(held.status, 201);
  world.clock.advance(1_000);
  const late = await world.request("POST", `/v1/holds/${held.json.id}/pay`);
  assert.deepEqual([late.status, late.json.code], [409, "HOLD_EXPIRED"]);
  await world.running.reconciler.runOnce();
  assert.equal((await world.request("GET", `/v1/holds/${held.json.id}`)).json.releaseReason, "expired");
  assert.equal((await world.request("GET", `/v1/sales/${saleId}`)).json.available, 1);
});

test("bad input is a 4xx naming the problem, and changes nothing", async () => {
  const saleId = await world.sale({ tickets: 5, perBuyerMax: 2 });
  await world.request("POST", `/v1/sales/${saleId}/holds`, { body: { buyer: "dee", quantity: 1 } });
  const before = await state(saleId);
  const cases: [string, string, unknown, number, string, string?][] = [
    [
      "POST",
      `/v1/sales/${saleId}/holds`,
      { buyer: "eve", quantity: 3 },
      422,
      "BUYER_OVER_CAP",
      "/body/quantity",
    ],
    [
      "POST",
      `/v1/sales/${saleId}/holds`,
      { buyer: "eve", quantity: 0 },
      400,
      "REQUEST_INVALID",
      "/body/quantity",
    ],
    [
      "POST",
      `/v1/sales/${saleId}/holds`,
      { buyer: "eve", quantity: "1" },
      400,
      "REQUEST_INVALID",
      "/body/quantity",
    ],
    [
      "POST",
      `/v1/sales/${saleId}/holds`,
      { buyer: "e v e", quantity: 1 },
      400,
      "REQUEST_INVALID",
      "/body/buyer",
    ],
    ["POST", `/v1/sales/${saleId}/holds`, { buyer: "eve" }, 400, "REQUEST_INVALID", "/body"],
    ["POST", `/v1/sales/${saleId}/holds`, { buyer: "dee", quantity: 1 }, 409, "BUYER_HAS_HOLD"],
    ["POST", "/v1/sales/no-such-sale/holds", { buyer: "eve", quantity: 1 }, 404, "SALE_NOT_FOUND"],
    ["POST", "/v1/sales/NOT%20A%20SALE/holds", { buyer: "eve", quantity: 1 }, 404, "SALE_NOT_FOUND"],
    ["POST", "/v1/holds/h_00000000000000000000000000000000/pay", undefined, 404, "HOLD_NOT_FOUND"],
    ["POST", "/v1/holds/forged/pay", undefined, 404, "HOLD_NOT_FOUND"],
    ["GET", "/v1/holds/forged", undefined, 404, "HOLD_NOT_FOUND"],
  ];
  for (const [method, url, body, status, code, field] of cases) {
    const res = await world.request(method, url, { body });
    assert.equal(res.status, status, `${method} ${url} ${JSON.stringify(body)}: ${JSON.stringify(res.json)}`);
    assert.equal(res.json.code, code);
    if (field !== undefined) {
      const named = res.json.field ?? res.json.errors?.[0]?.field;
      assert.ok(String(named).startsWith(field), `${code} names ${named}, expected ${field}`);
    }
  }
  assert.deepEqual(await state(saleId), before);
});

test("a sale that has not opened refuses reservations with 409 SALE_NOT_OPEN", async () => {
  const opensAt = new Date(world.clock.nowMs() + 60_000).toISOString();
  const saleId = await world.sale({ opensAt });
  const early = await world.request("POST", `/v1/sales/${saleId}/holds`, {
    body: { buyer: "fay", quantity: 1 },
  });
  assert.deepEqual([early.status, early.json.code, early.json.opensAt], [409, "SALE_NOT_OPEN", opensAt]);
});

test("/metrics shows the stock per sale and the holds by state", async () => {
  const text = (await world.running.service.app.inject({ url: "/metrics" })).body;
  assert.match(text, /^flash_sale_stock_available\{sale="concert"\} 3$/m);
  assert.match(text, /^flash_sale_holds\{state="charging"\} \d+$/m);
  assert.match(text, /^flash_sale_holds\{state="paid"\} 1$/m);
});

/**
 * The sale API end to end, in process on PGlite and the in-process stock: create (admin),
 * status, reserve, pay ("payment processing"), the hold and its order; every bad input is a
 * 4xx naming the problem and changes nothing (the stock and the holds read the same after).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { checkOpenApiDocument } from "@casebook/lab/openapi-check";
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
  const held = await world.reserve(saleId, "ana", 2);
  assert.equal(held.status, 201, JSON.stringify(held.json));
  assert.deepEqual([held.json.state, held.json.numbers], ["held", [1, 2]]);
  assert.equal(held.headers.location, `/v1/holds/${held.json.id}`);
  const soldOut = await world.reserve(saleId, "bea", 1);
  assert.deepEqual([soldOut.status, soldOut.json.code], [409, "SALE_SOLD_OUT"]);
  assert.equal((await world.request("GET", `/v1/sales/${saleId}`)).json.soldOut, true);
  const paid = await world.request("POST", `/v1/holds/${held.json.id}/pay`);
  assert.equal(paid.status, 202, JSON.stringify(paid.json));
  assert.equal(paid.json.state, "charging");
  assert.match(paid.json.message, /payment processing/i);
  const twice = await world.request("POST", `/v1/holds/${held.json.id}/pay`);
  assert.deepEqual([twice.status, twice.json.code], [409, "HOLD_NOT_PAYABLE"]);
  assert.ok(["charging", "paid"].includes(twice.json.holdState), twice.json.holdState);
  // The charge worker drains the queue in the background (every 100 ms). A round here charges
  // the hold unless the background worker already holds its lease — then that worker finishes
  // it: wait (bounded) for the hold to leave "charging", then check it ended paid.
  await world.running.charges.runOnce();
  const order = await eventually(() => world.request("GET", `/v1/holds/${held.json.id}`), {
    what: `hold ${held.json.id} to leave "charging"`,
    timeoutMs: 10_000,
    accept: (answer) => answer.status !== 200 || answer.json.state !== "charging",
  });
  assert.deepEqual(
    [order.json.state, order.json.order.paymentId, order.json.order.amountMinor],
    ["paid", `local_${held.json.id}`, 10_000],
  );
});

test("FS-08 a hold not paid in time: pay answers 409 HOLD_EXPIRED and the reconciler gives the tickets back", async () => {
  const saleId = await world.sale({ tickets: 1, holdTtlMs: 1_000 });
  const held = await world.reserve(saleId, "cy", 1);
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
  const dee = await world.admitted(saleId, "dee");
  const deeHeld = await world.request("POST", `/v1/sales/${saleId}/holds`, {
    body: { quantity: 1 },
    headers: dee,
  });
  assert.equal(deeHeld.status, 201);
  const eve = await world.admitted(saleId, "eve");
  const other = await world.sale({ tickets: 1 });
  const before = await state(saleId);
  const token = eve.authorization!;
  const secret = eve["x-entrant-secret"]!;
  const holds = `/v1/sales/${saleId}/holds`;
  const borrowed = { authorization: token, "x-entrant-secret": dee["x-entrant-secret"]! };
  const forged = { ...eve, authorization: "Bearer local.e30.forged" };
  type Case = [string, string, unknown, Record<string, string>, number, string, string?];
  const cases: Case[] = [
    ["POST", holds, { quantity: 3 }, eve, 422, "BUYER_OVER_CAP", "/body/quantity"],
    ["POST", holds, { quantity: 0 }, eve, 400, "REQUEST_INVALID", "/body/quantity"],
    ["POST", holds, { quantity: "1" }, eve, 400, "REQUEST_INVALID", "/body/quantity"],
    ["POST", holds, { quantity: 1, buyer: "x" }, eve, 400, "REQUEST_INVALID", "/body"],
    ["POST", holds, {}, eve, 400, "REQUEST_INVALID", "/body"],
    ["POST", holds, { quantity: 1 }, dee, 409, "BUYER_HAS_HOLD"],
    ["POST", holds, { quantity: 1 }, {}, 401, "ADMISSION_REQUIRED", "/headers/authorization"],
    ["POST", holds, { quantity: 1 }, forged, 401, "ADMISSION_INVALID"],
    ["POST", holds, { quantity: 1 }, borrowed, 403, "ADMISSION_NOT_YOURS", "/headers/x-entrant-secret"],
    ["POST", holds, { quantity: 1 }, { authorization: token }, 403, "ADMISSION_NOT_YOURS"],
    [
      "POST",
      `/v1/sales/${other}/holds`,
      { quantity: 1 },
      { authorization: token, "x-entrant-secret": secret },
      403,
      "ADMISSION_NOT_YOURS",
    ],
    ["POST", "/v1/sales/no-such-sale/holds", { quantity: 1 }, eve, 404, "SALE_NOT_FOUND"],
    ["POST", "/v1/sales/NOT%20A%20SALE/holds", { quantity: 1 }, eve, 404, "SALE_NOT_FOUND"],
    ["POST", `/v1/sales/${saleId}/entrants`, { user: "a b" }, {}, 400, "REQUEST_INVALID", "/body/user"],
    [
      "POST",
      `/v1/sales/${saleId}/entrants/eve/admission`,
      undefined,
      { "x-entrant-secret": "wrong" },
      403,
      "ENTRANT_SECRET_INVALID",
    ],
    [
      "POST",
      `/v1/sales/${saleId}/entrants/nobody/admission`,
      undefined,
      { "x-entrant-secret": "x" },
      404,
      "ENTRANT_NOT_FOUND",
    ],
    ["POST", "/v1/holds/h_00000000000000000000000000000000/pay", undefined, {}, 404, "HOLD_NOT_FOUND"],
    ["POST", "/v1/holds/forged/pay", undefined, {}, 404, "HOLD_NOT_FOUND"],
    ["GET", "/v1/holds/forged", undefined, {}, 404, "HOLD_NOT_FOUND"],
  ];
  for (const [method, url, body, headers, status, code, field] of cases) {
    const res = await world.request(method, url, { body, headers });
    assert.equal(res.status, status, `${method} ${url} ${JSON.stringify(body)}: ${JSON.stringify(res.json)}`);
    assert.equal(res.json.code, code);
    if (field !== undefined) {
      const named = res.json.field ?? res.json.errors?.[0]?.field;
      assert.ok(String(named).startsWith(field), `${code} names ${named}, expected ${field}`);
    }
  }
  assert.deepEqual(await state(saleId), before);
});

test("FS-13 a sale that has not opened keeps its entrants in the pre-queue, with no token", async () => {
  const opensAt = new Date(world.clock.nowMs() + 60_000).toISOString();
  const saleId = await world.sale({ opensAt });
  const joined = await world.request("POST", `/v1/sales/${saleId}/entrants`, { body: { user: "fay" } });
  assert.deepEqual([joined.status, joined.json.preQueue, joined.json.position], [201, true, null]);
  const turn = await world.request("POST", `/v1/sales/${saleId}/entrants/fay/admission`, {
    headers: { "x-entrant-secret": joined.json.secret },
  });
  assert.deepEqual([turn.json.state, turn.json.token], ["pre-queue", null], "no token before the opening");
  const room = await world.request("GET", `/v1/sales/${saleId}/room`);
  assert.deepEqual([room.json.open, room.headers["cache-control"]], [false, "public, max-age=1"]);
});

test("FS-13 FS-20 an entrant waits with its position and estimated wait until the room serves it, then gets a signed token with a key id", async () => {
  const saleId = await world.sale({ tickets: 5 });
  const users = Array.from({ length: 150 }, (_, i) => `w${i}`);
  const secrets = new Map<string, string>();
  for (const user of users) {
    const j = await world.request("POST", `/v1/sales/${saleId}/entrants`, { body: { user } });
    secrets.set(user, j.json.secret);
  }
  const again = await world.request("POST", `/v1/sales/${saleId}/entrants`, { body: { user: "w0" } });
  assert.deepEqual(
    [again.status, again.json.secret, again.json.position],
    [200, null, 1],
    "one position per user; the secret once",
  );
  const last = async () =>
    world.request("POST", `/v1/sales/${saleId}/entrants/w149/admission`, {
      headers: { "x-entrant-secret": secrets.get("w149")! },
    });
  const waiting = await last();
  assert.deepEqual(
    [waiting.json.state, waiting.json.position, waiting.json.ahead, waiting.json.token],
    ["waiting", 150, 149, null],
  );
  assert.equal(waiting.json.estimatedWaitMs, 1_500, "150 positions at 100 admitted per second");
  assert.equal(waiting.headers["cache-control"], "no-store");
  world.clock.advance(1_000);
  await world.running.rooms.tickAll();
  assert.equal((await world.request("GET", `/v1/sales/${saleId}/room`)).json.servingUpTo, 100);
  world.clock.advance(1_000);
  await world.running.rooms.tickAll();
  const admitted = await last();
  assert.equal(admitted.json.state, "admitted");
  assert.match(admitted.json.token, /^local\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, "kid.payload.signature");
});

test("/metrics shows the stock per sale and the holds by state", async () => {
  const text = (await world.running.service.app.inject({ url: "/metrics" })).body;
  assert.match(text, /^flash_sale_stock_available\{sale="concert"\} 3$/m);
  assert.match(text, /^flash_sale_holds\{state="charging"\} \d+$/m);
  assert.match(text, /^flash_sale_holds\{state="paid"\} 1$/m);
});

test("every route is in a valid /openapi.json with a 2xx schema; the admin route needs the bearer token", async () => {
  assert.deepEqual(await checkOpenApiDocument(world.running.url, world.running.service.routes), []);
  // biome-ignore lint/suspicious/noExplicitAny: the document is JSON walked by key
  const doc: any = await (await fetch(`${world.running.url}/openapi.json`)).json();
  assert.deepEqual(doc.paths["/v1/admin/sales"].post.security, [{ bearerAuth: [] }]);
  assert.match(doc.paths["/v1/sales/{saleId}/holds"].post.responses["409"].description, /SALE_SOLD_OUT/);
});

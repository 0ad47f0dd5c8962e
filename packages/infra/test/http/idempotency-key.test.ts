import assert from "node:assert/strict";
import { test } from "node:test";
import { idempotencyKeyHeaders, idempotencyKeyOf } from "../../src/http/idempotency-key.ts";
import { createService } from "../../src/http/service.ts";

async function keyed() {
  const service = createService({
    name: "keyed",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const headers = { type: "object", properties: { ...idempotencyKeyHeaders() } };
  service.app.post("/schema", { schema: { headers } }, async (request) => ({
    key: idempotencyKeyOf(request.headers) ?? null,
  }));
  service.app.post("/function", async (request) => ({ key: idempotencyKeyOf(request.headers) ?? null }));
  await service.app.ready();
  return service;
}

test("a route with the header schema and one with the function answer the same: the key, none, or a 400 naming the header", async (t) => {
  const service = await keyed();
  t.after(() => service.close());
  for (const url of ["/schema", "/function"]) {
    const ok = await service.app.inject({ method: "POST", url, headers: { "idempotency-key": 'a/{"b"}~' } });
    assert.deepEqual(ok.json(), { key: 'a/{"b"}~' }, url);
    assert.deepEqual((await service.app.inject({ method: "POST", url })).json(), { key: null }, url);
    for (const bad of ["has space", "k".repeat(256), ""]) {
      const res = await service.app.inject({ method: "POST", url, headers: { "idempotency-key": bad } });
      assert.equal(res.statusCode, 400, `${url} ${bad}`);
      const body = res.json();
      assert.equal(body.code, "REQUEST_INVALID");
      assert.deepEqual(
        body.errors.map((e: { field: string }) => e.field),
        ["/headers/idempotency-key"],
      );
    }
  }
});

test('a repeated header (Node joins it with ", ") is refused', () => {
  assert.throws(() => idempotencyKeyOf({ "idempotency-key": "a, b" }), /invalid/i);
  assert.equal(idempotencyKeyOf({}), undefined);
});

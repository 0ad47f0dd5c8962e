import assert from "node:assert/strict";
import { test } from "node:test";
import { createService } from "../../src/http/service.ts";

/** A service with a body route, a body-less POST, a GET with a typed query and a path param. */
function strictService() {
  const service = createService({
    name: "widgets",
    version: "1.0.0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const seen: unknown[] = [];
  service.app.addSchema({ $id: "tag", type: "string", maxLength: 20 });
  service.app.post(
    "/widgets",
    {
      schema: {
        body: {
          type: "object",
          required: ["name", "cost"],
          additionalProperties: false,
          properties: {
            name: { type: "string" },
            cost: { type: "integer" },
            ip: { type: "string" },
            tags: { type: "array", items: { $ref: "tag#" } },
            live: { type: "boolean" },
            payload: {},
          },
        },
      },
    },
    async (request) => {
      seen.push(request.body);
      return { created: true };
    },
  );
  service.app.post("/widgets/:id/rotate", async (request) => {
    seen.push(request.body);
    return { rotated: (request.params as { id: string }).id };
  });
  service.app.get(
    "/widgets/:id",
    { schema: { querystring: { type: "object", properties: { limit: { type: "integer" } } } } },
    async (request) => ({ id: (request.params as { id: string }).id, query: request.query }),
  );
  service.app.delete("/widgets/:id", async () => ({ deleted: true }));
  return { service, seen };
}

async function post(service: ReturnType<typeof strictService>["service"], payload: string, url = "/widgets") {
  return service.app.inject({
    method: "POST",
    url,
    headers: { "content-type": "application/json" },
    payload,
  });
}

function assertProblem(res: { statusCode: number; headers: Record<string, unknown> }, status: number) {
  assert.equal(res.statusCode, status);
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
}

test("a wrong JSON type in a body is 400 naming the field and the type: bodies are never coerced", async () => {
  const { service, seen } = strictService();
  const cases: Array<[Record<string, unknown>, string, RegExp]> = [
    [{ name: "a", cost: "3" }, "/body/cost", /integer/],
    [{ name: "a", cost: true }, "/body/cost", /integer/],
    [{ name: "a", cost: 1, ip: 5 }, "/body/ip", /string/],
    [{ name: "a", cost: 1, ip: ["a"] }, "/body/ip", /string/],
    [{ name: 5, cost: 1 }, "/body/name", /string/],
    [{ name: "a", cost: 1, tags: "one" }, "/body/tags", /array/],
    [{ name: "a", cost: 1, tags: [7] }, "/body/tags/0", /string/],
    [{ name: "a", cost: 1, live: "true" }, "/body/live", /boolean/],
    [{ name: "a", cost: null }, "/body/cost", /integer/],
  ];
  for (const [payload, field, type] of cases) {
    const res = await post(service, JSON.stringify(payload));
    assertProblem(res, 400);
    const problem = res.json();
    assert.equal(problem.code, "REQUEST_INVALID", JSON.stringify(payload));
    assert.equal(problem.errors[0].field, field, JSON.stringify(payload));
    assert.match(problem.errors[0].message, type, JSON.stringify(payload));
  }
  assert.deepEqual(seen, [], "no bad body reached the handler");
  const ok = await post(service, JSON.stringify({ name: "a", cost: 3, tags: ["x"], live: false }));
  assert.equal(ok.statusCode, 200);
  await service.close();
});

test("query strings and path params are text: still parsed by their schema", async () => {
  const { service } = strictService();
  const res = await service.app.inject({ url: "/widgets/w1?limit=10" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { id: "w1", query: { limit: 10 } });
  const bad = await service.app.inject({ url: "/widgets/w1?limit=ten" });
  assertProblem(bad, 400);
  assert.equal(bad.json().errors[0].field, "/querystring/limit");
  await service.close();
});

test("U+0000 and lone surrogates in a body value or key are 400 naming the field", async () => {
  const { service, seen } = strictService();
  const cases: Array<[string, string, RegExp]> = [
    ['{"name":"a\\u0000b","cost":1}', "/body/name", /U\+0000/],
    ['{"name":"a\\ud800","cost":1}', "/body/name", /surrogate/],
    ['{"name":"a\\udc00b","cost":1}', "/body/name", /surrogate/],
    ['{"name":"a","cost":1,"tags":["ok","\\u0000"]}', "/body/tags/1", /U\+0000/],
    ['{"name":"a","cost":1,"payload":{"deep":[{"x\\u0000":1}]}}', "/body/payload/deep/0", /key "x\\u0000"/],
    ['{"name":"a","cost":1,"payload":{"\\ud83d":1}}', "/body/payload", /surrogate/],
    ['{"name":"a","cost":1,"payload":{"a/b":["\\u0000"]}}', "/body/payload/a~1b/0", /U\+0000/],
  ];
  for (const [payload, field, reason] of cases) {
    const res = await post(service, payload);
    assertProblem(res, 400);
    const problem = res.json();
    assert.equal(problem.code, "REQUEST_INVALID", payload);
    assert.equal(problem.errors[0].field, field, payload);
    assert.match(problem.errors[0].message, reason, payload);
    assert.ok(res.body.isWellFormed() && !res.body.includes("\u0000"), "the answer is storable text too");
  }
  assert.deepEqual(seen, []);
  const emoji = await post(service, '{"name":"\\ud83d\\ude00","cost":1}');
  assert.equal(emoji.statusCode, 200, "a surrogate pair is well-formed");
  await service.close();
});

test("U+0000 in a path param or a query string is 400 naming it", async () => {
  const { service } = strictService();
  const param = await service.app.inject({ url: "/widgets/abc%00" });
  assertProblem(param, 400);
  assert.equal(param.json().errors[0].field, "/params/id");
  const query = await service.app.inject({ url: "/widgets/abc?note=x%00y" });
  assertProblem(query, 400);
  assert.equal(query.json().errors[0].field, "/querystring/note");
  const rotate = await service.app.inject({ method: "POST", url: "/widgets/a%00/rotate" });
  assertProblem(rotate, 400);
  await service.close();
});

test("a __proto__ key or constructor.prototype is refused with a message that says so", async () => {
  const { service, seen } = strictService();
  const proto = await post(service, '{"name":"a","cost":1,"payload":{"__proto__":{"admin":true}}}');
  assertProblem(proto, 400);
  assert.equal(proto.json().errors[0].field, "/body/payload/__proto__");
  assert.match(proto.json().errors[0].message, /__proto__/);
  const top = await post(service, '{"__proto__":{"admin":true},"name":"a","cost":1}');
  assertProblem(top, 400);
  assert.equal(top.json().errors[0].field, "/body/__proto__");
  const ctor = await post(service, '{"name":"a","cost":1,"payload":{"constructor":{"prototype":{"x":1}}}}');
  assertProblem(ctor, 400);
  assert.equal(ctor.json().errors[0].field, "/body/payload/constructor/prototype");
  assert.deepEqual(seen, []);
  await service.close();
});

test("malformed JSON is 400 REQUEST_MALFORMED; a deeply nested body is walked without overflowing", async () => {
  const { service } = strictService();
  const malformed = await post(service, '{"name":');
  assertProblem(malformed, 400);
  assert.equal(malformed.json().code, "REQUEST_MALFORMED");
  const deep = `{"name":"a","cost":1,"payload":${"[".repeat(100_000)}"\\u0000"${"]".repeat(100_000)}}`;
  const res = await post(service, deep);
  assertProblem(res, 400);
  assert.match(res.json().errors[0].field, /^\/body\/payload(\/0)+$/);
  await service.close();
});

test("an empty JSON body is no body: accepted where the route takes none, 400 /body where it takes one", async () => {
  const { service, seen } = strictService();
  const rotate = await post(service, "", "/widgets/w1/rotate");
  assert.equal(rotate.statusCode, 200);
  assert.deepEqual(rotate.json(), { rotated: "w1" });
  assert.deepEqual(seen, [undefined]);
  const create = await post(service, "");
  assertProblem(create, 400);
  assert.equal(create.json().code, "REQUEST_INVALID");
  assert.equal(create.json().errors[0].field, "/body");
  await service.close();
});

test("every Content-Type but JSON is 415, text/plain included", async () => {
  const { service } = strictService();
  for (const type of ["text/plain", "text/csv", "application/x-www-form-urlencoded", "application/xml"]) {
    const res = await service.app.inject({
      method: "POST",
      url: "/widgets",
      headers: { "content-type": type },
      payload: '{"name":"a","cost":1}',
    });
    assertProblem(res, 415);
    assert.equal(res.json().code, "REQUEST_MEDIA_TYPE_UNSUPPORTED", type);
  }
  const charset = await service.app.inject({
    method: "POST",
    url: "/widgets",
    headers: { "content-type": "application/json; charset=utf-8" },
    payload: '{"name":"a","cost":1}',
  });
  assert.equal(charset.statusCode, 200);
  await service.close();
});

test("a known path under another method is 405 with Allow; an unknown path stays 404", async () => {
  const { service } = strictService();
  const put = await service.app.inject({ method: "PUT", url: "/widgets/w1" });
  assertProblem(put, 405);
  assert.equal(put.headers.allow, "DELETE, GET, HEAD");
  const problem = put.json();
  assert.equal(problem.code, "REQUEST_METHOD_NOT_ALLOWED");
  assert.deepEqual(problem.allow, ["DELETE", "GET", "HEAD"]);
  const get = await service.app.inject({ method: "GET", url: "/widgets?x=1" });
  assertProblem(get, 405);
  assert.equal(get.headers.allow, "POST");
  const ops = await service.app.inject({ method: "POST", url: "/healthz" });
  assertProblem(ops, 405);
  assert.equal(ops.headers.allow, "GET, HEAD");
  const unknown = await service.app.inject({ method: "PUT", url: "/nothing/here" });
  assertProblem(unknown, 404);
  assert.equal(unknown.headers.allow, undefined);
  await service.close();
});

test("header schemas still match whatever the case of the names they declare", async () => {
  const service = createService({ name: "h", version: "1", log: { level: "silent" }, defaultMetrics: false });
  service.app.get(
    "/keyed",
    {
      schema: {
        headers: {
          type: "object",
          required: ["X-Request-Tag"],
          properties: { "X-Request-Tag": { type: "integer", maximum: 9 } },
        },
      },
    },
    async (request) => ({ tag: request.headers["x-request-tag"] }),
  );
  const ok = await service.app.inject({ url: "/keyed", headers: { "x-request-tag": "7" } });
  assert.equal(ok.statusCode, 200);
  assert.deepEqual(ok.json(), { tag: 7 }, "a header is text: parsed by its schema");
  const missing = await service.app.inject({ url: "/keyed" });
  assertProblem(missing, 400);
  assert.equal(missing.json().errors[0].field, "/headers/x-request-tag");
  await service.close();
});

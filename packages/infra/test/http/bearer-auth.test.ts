import assert from "node:assert/strict";
import { test } from "node:test";
import {
  bearerToken,
  createBearerAuth,
  createStaticTokenAuth,
  staticTokenMatcher,
} from "../../src/http/bearer-auth.ts";
import { createService } from "../../src/http/service.ts";

/**
 * A service with one route behind each hook; `verified` counts the credentials verify saw.
 * `verify: "at once"` answers with a plain value (a key cache's fresh entry), not a promise.
 */
async function guarded(options: { verify?: "async" | "at once" } = {}) {
  const service = createService({
    name: "guarded",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const verified: string[] = [];
  const auth = createBearerAuth({
    realm: "guarded",
    verify: (key) => {
      verified.push(key);
      const principal = key === "good-key" ? { tenant: "ten_1" } : undefined;
      return options.verify === "at once" ? principal : Promise.resolve(principal);
    },
  });
  await service.app.register(async (scope) => {
    scope.addHook("onRequest", auth.authenticate);
    scope.post("/things", async (request) => ({ principal: auth.principalOf(request) }));
  });
  await service.app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "guarded", token: "admin-token" }));
    scope.get("/admin", async () => ({ admin: true }));
  });
  service.app.get("/open", async (request) => auth.principalOf(request));
  await service.app.ready();
  const call = (method: "GET" | "POST", url: string, authorization?: string, payload?: string) =>
    service.app.inject({
      method,
      url,
      headers: {
        ...(authorization === undefined ? {} : { authorization }),
        ...(payload === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(payload === undefined ? {} : { payload }),
    });
  return { service, verified, call };
}

test("bearerToken reads `Bearer <token>` (any case, extra spaces) and nothing else", () => {
  assert.equal(bearerToken("Bearer abc"), "abc");
  assert.equal(bearerToken("bearer   abc  "), "abc");
  for (const bad of ["Basic dTpw", "Bearer", "Bearer ", "Bearer a b", undefined, ["Bearer a"]]) {
    assert.equal(bearerToken(bad), undefined, String(bad));
  }
});

test("no usable credentials: 401 AUTH_MISSING problem+json, WWW-Authenticate without an error, body never parsed", async (t) => {
  const { service, verified, call } = await guarded();
  t.after(() => service.close());
  for (const authorization of [undefined, "Basic dTpw", "Bearer "]) {
    const res = await call("POST", "/things", authorization, "{not json");
    assert.equal(res.statusCode, 401, String(authorization));
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    assert.equal(res.json().code, "AUTH_MISSING");
    assert.equal(res.headers["www-authenticate"], 'Bearer realm="guarded"');
  }
  assert.deepEqual(verified, []);
});

test('a wrong key: 401 AUTH_INVALID with error="invalid_token"; an over-long one is refused unverified', async (t) => {
  const { service, verified, call } = await guarded();
  t.after(() => service.close());
  for (const key of ["wrong-key", "x".repeat(257)]) {
    const res = await call("POST", "/things", `Bearer ${key}`);
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, "AUTH_INVALID");
    assert.equal(res.headers["www-authenticate"], 'Bearer realm="guarded", error="invalid_token"');
  }
  assert.deepEqual(verified, ["wrong-key"]);
});

test("a good key: the route reads the principal verify resolved; outside the scope principalOf is a bug (500)", async (t) => {
  const { service, call } = await guarded();
  t.after(() => service.close());
  const res = await call("POST", "/things", "Bearer good-key");
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { principal: { tenant: "ten_1" } });
  assert.equal((await call("GET", "/open", "Bearer good-key")).statusCode, 500);
});

test("a static token (an operator's): the exact token passes, any other is AUTH_INVALID, none AUTH_MISSING", async (t) => {
  const { service, call } = await guarded();
  t.after(() => service.close());
  assert.equal((await call("GET", "/admin", "Bearer admin-token")).statusCode, 200);
  for (const [authorization, code] of [
    ["Bearer admin-tokem", "AUTH_INVALID"],
    ["Bearer admin-token-and-more", "AUTH_INVALID"],
    [undefined, "AUTH_MISSING"],
  ] as const) {
    const res = await call("GET", "/admin", authorization);
    assert.equal(res.statusCode, 401);
    assert.equal(res.json().code, code);
  }
  assert.throws(() => createBearerAuth({ realm: 'bad"realm', verify: async () => undefined }), RangeError);
});

test("static tokens: several are admitted (a rotation), any other or an empty list is not", async (t) => {
  const matches = staticTokenMatcher(["old-token-123", "new-token-456"]);
  assert.equal(matches("old-token-123"), true);
  assert.equal(matches("new-token-456"), true);
  for (const wrong of ["", "old-token-12", "new-token-4567", "x".repeat(300)])
    assert.equal(matches(wrong), false);
  assert.throws(() => staticTokenMatcher([]), RangeError);
  assert.throws(() => staticTokenMatcher(["ok", ""]), RangeError);

  const service = createService({
    name: "rotating",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  t.after(() => service.close());
  await service.app.register(async (scope) => {
    scope.addHook(
      "onRequest",
      createStaticTokenAuth({ realm: "rotating", token: ["old-token-123", "new-token-456"] }),
    );
    scope.get("/admin", async () => ({ admin: true }));
  });
  const get = (authorization: string) =>
    service.app.inject({ method: "GET", url: "/admin", headers: { authorization } });
  assert.equal((await get("Bearer old-token-123")).statusCode, 200);
  assert.equal((await get("Bearer new-token-456")).statusCode, 200);
  const refused = await get("Bearer other-token");
  assert.equal(refused.statusCode, 401);
  assert.equal(refused.json().code, "AUTH_INVALID");
});

test("a verify that answers at once (a key cache's fresh entry) admits and refuses like an async one", async (t) => {
  const { service, verified, call } = await guarded({ verify: "at once" });
  t.after(() => service.close());
  const ok = await call("POST", "/things", "Bearer good-key", "{}");
  assert.equal(ok.statusCode, 200);
  assert.deepEqual(ok.json(), { principal: { tenant: "ten_1" } });
  const refused = await call("POST", "/things", "Bearer bad-key", "{}");
  assert.equal(refused.statusCode, 401);
  assert.equal(refused.json().code, "AUTH_INVALID");
  assert.equal(refused.headers["www-authenticate"], 'Bearer realm="guarded", error="invalid_token"');
  assert.deepEqual(verified, ["good-key", "bad-key"]);
});

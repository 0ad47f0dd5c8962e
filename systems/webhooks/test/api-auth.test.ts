/**
 * Who may call what, through HTTP on PGlite and PostgreSQL: every tenant route refuses a
 * request without a usable API key (401 problem+json with WWW-Authenticate) before its body
 * is even parsed; wrong, malformed and revoked keys are one AUTH_INVALID; the admin API
 * takes only the operator's token (and exists only when one is configured); tenants and
 * keys made through it work at once, with the service's retention defaults.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { ADMIN_TOKEN, apiBackends, assertProblem } from "./api-fixture.ts";

const ID = `sub_${"a".repeat(32)}`;
const DLV = `dlv_${"a".repeat(32)}`;
/** Every tenant route, with a body that would be valid (auth must refuse before validation anyway). */
const TENANT_ROUTES: [string, string][] = [
  ["POST", "/v1/events"],
  ["GET", `/v1/events/msg_${"a".repeat(32)}`],
  ["POST", "/v1/subscriptions"],
  ["GET", "/v1/subscriptions"],
  ["GET", `/v1/subscriptions/${ID}`],
  ["PATCH", `/v1/subscriptions/${ID}`],
  ["DELETE", `/v1/subscriptions/${ID}`],
  ["POST", `/v1/subscriptions/${ID}/rotate-secret`],
  ["GET", "/v1/webhook-deliveries"],
  ["GET", `/v1/webhook-deliveries/${DLV}`],
  ["GET", `/v1/webhook-deliveries/${DLV}/attempts`],
  ["POST", `/v1/webhook-deliveries/${DLV}/replay`],
];

contractSuite("API authentication", apiBackends("wh_api_auth"), (it) => {
  it("WH-02 every tenant route without credentials: 401 AUTH_MISSING with WWW-Authenticate, before the body is parsed", async (s) => {
    for (const [method, url] of TENANT_ROUTES) {
      const res = await s.request(method, url, {
        headers: { "content-type": "application/json" },
        body: "{not json",
      });
      assertProblem(res, 401, "AUTH_MISSING");
      assert.equal(res.headers["www-authenticate"], 'Bearer realm="webhooks"', `${method} ${url}`);
    }
  });

  it("WH-02 a wrong, malformed, oversized, non-Bearer or revoked key: 401, and one code for all of them", async (s) => {
    const { id, key } = await s.tenant();
    const wrong = `${key.slice(0, -2)}${key.endsWith("AA") ? "BB" : "AA"}`;
    for (const bad of [wrong, "whk_nope", "x".repeat(300), "sk_live_not_ours"]) {
      const res = await s.request("GET", "/v1/subscriptions", { key: bad });
      assertProblem(res, 401, "AUTH_INVALID");
      assert.match(String(res.headers["www-authenticate"]), /error="invalid_token"/);
    }
    const basic = await s.request("GET", "/v1/subscriptions", { headers: { authorization: `Basic ${key}` } });
    assertProblem(basic, 401, "AUTH_MISSING");
    const lower = await s.request("GET", "/v1/subscriptions", {
      headers: { authorization: `bearer ${key}` },
    });
    assert.equal(lower.status, 200, "the scheme is case-insensitive (RFC 9110)");
    const prefix = key.split("_").slice(0, 2).join("_");
    const revoked = await s.request("DELETE", `/v1/admin/tenants/${id}/api-keys/${prefix}`, {
      key: ADMIN_TOKEN,
    });
    assert.equal(revoked.status, 204);
    assertProblem(await s.request("GET", "/v1/subscriptions", { key }), 401, "AUTH_INVALID");
    assertProblem(
      await s.request("DELETE", `/v1/admin/tenants/${id}/api-keys/${prefix}`, { key: ADMIN_TOKEN }),
      404,
      "RESOURCE_NOT_FOUND",
    );
  });

  it("WH-02 the admin API takes only the operator's token; a tenant key is not one, nor is the token a tenant key", async (s) => {
    const { key } = await s.tenant();
    const body = { name: "Globex" };
    assertProblem(await s.request("POST", "/v1/admin/tenants", { body }), 401, "AUTH_MISSING");
    for (const bad of [key, `${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(1)]) {
      assertProblem(await s.request("POST", "/v1/admin/tenants", { key: bad, body }), 401, "AUTH_INVALID");
    }
    assertProblem(await s.request("GET", "/v1/subscriptions", { key: ADMIN_TOKEN }), 401, "AUTH_INVALID");
  });

  it("WH-02 a tenant made through the admin API: its key works at once, with the service's retention defaults", async (s) => {
    const id = `globex_${Date.now().toString(36)}`;
    const created = await s.request("POST", "/v1/admin/tenants", {
      key: ADMIN_TOKEN,
      body: { id, name: "Globex", weight: 3 },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(
      [created.body.tenant.id, created.body.tenant.weight, created.body.tenant.deliveryWindowS],
      [id, 3, 86_400],
    );
    assert.match(created.body.apiKey.key, /^whk_[0-9a-f]{16}_/);
    const key = created.body.apiKey.key as string;
    assert.equal((await s.request("GET", "/v1/subscriptions", { key })).status, 200);
    const again = await s.request("POST", "/v1/admin/tenants", {
      key: ADMIN_TOKEN,
      body: { id, name: "Other" },
    });
    assert.deepEqual(assertProblem(again, 400, "WEBHOOK_TENANT_INVALID").errors[0].field, "/body/id");
    const weighted = await s.request("PATCH", `/v1/admin/tenants/${id}`, {
      key: ADMIN_TOKEN,
      body: { weight: 7 },
    });
    assert.equal(weighted.body.weight, 7);
    const second = await s.request("POST", `/v1/admin/tenants/${id}/api-keys`, { key: ADMIN_TOKEN });
    assert.equal(second.status, 201);
    assert.notEqual(second.body.key, key);
    assert.equal((await s.request("GET", "/v1/subscriptions", { key: second.body.key })).status, 200);
    const missing = await s.request("PATCH", "/v1/admin/tenants/nobody", {
      key: ADMIN_TOKEN,
      body: { weight: 2 },
    });
    assertProblem(missing, 404, "WEBHOOK_TENANT_NOT_FOUND");
    const short = await s.request("POST", "/v1/admin/tenants", {
      key: ADMIN_TOKEN,
      body: { name: "Initech", deliveryWindowS: 3_600 },
    });
    assert.deepEqual(
      [short.body.tenant.deliveryWindowS, short.body.tenant.payloadRetentionS],
      [3_600, 86_400],
      "a shorter window keeps the default payload retention (>= the window)",
    );
  });
});

contractSuite("API without an admin token", apiBackends("wh_api_noadmin", { adminToken: null }), (it) => {
  it("no WEBHOOKS_ADMIN_TOKEN: the admin routes do not exist (404), whatever the credential", async (s) => {
    for (const key of [undefined, ADMIN_TOKEN]) {
      const res = await s.request("POST", "/v1/admin/tenants", {
        ...(key === undefined ? {} : { key }),
        body: { name: "x" },
      });
      assertProblem(res, 404, "RESOURCE_NOT_FOUND");
    }
  });
});

/**
 * The admin key API (infra's api-key-admin-routes, bound to tenants) through HTTP on PGlite
 * and PostgreSQL: list shows prefixes and times and never a key or a hash; last_used_at
 * follows authentication; rotation keeps the old key working through the overlap it names
 * and not after; revocation is immediate; bad input is a 400 naming the field.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { ADMIN_TOKEN, apiBackends, assertProblem, problemFields } from "./api-fixture.ts";

const MINUTE_MS = 60_000;

contractSuite("admin key API", apiBackends("wh_api_keys"), (it) => {
  it("list: prefix, createdAt, lastUsedAt, expiresAt, revokedAt — never the key or its hash", async (s) => {
    const { id, key } = await s.tenant();
    const keys = `/v1/admin/tenants/${id}/api-keys`;
    const before = await s.request("GET", keys, { key: ADMIN_TOKEN });
    assert.equal(before.status, 200, JSON.stringify(before.body));
    assert.equal(before.body.keys.length, 1);
    const [info] = before.body.keys;
    assert.deepEqual(Object.keys(info).sort(), [
      "createdAt",
      "expiresAt",
      "lastUsedAt",
      "prefix",
      "revokedAt",
    ]);
    assert.equal(key.startsWith(`${info.prefix}_`), true);
    assert.equal(info.lastUsedAt, null, "not used yet");
    assert.doesNotMatch(JSON.stringify(before.body), new RegExp(key.slice(-20)), "no secret in the listing");
    s.clock.advance(MINUTE_MS);
    assert.equal((await s.request("GET", "/v1/subscriptions", { key })).status, 200);
    const after = await s.request("GET", keys, { key: ADMIN_TOKEN });
    assert.equal(after.body.keys[0].lastUsedAt, new Date(s.clock.nowMs()).toISOString());
    assertProblem(
      await s.request("GET", "/v1/admin/tenants/nobody/api-keys", { key: ADMIN_TOKEN }),
      404,
      "WEBHOOK_TENANT_NOT_FOUND",
    );
    assertProblem(await s.request("GET", keys, { key }), 401, "AUTH_INVALID");
  });

  it("rotate: the new key works at once, the old one through expiresInS and not after", async (s) => {
    const { id, key: old } = await s.tenant();
    const rotated = await s.request("POST", `/v1/admin/tenants/${id}/api-keys/rotate`, {
      key: ADMIN_TOKEN,
      body: { expiresInS: 600 },
    });
    assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
    assert.match(rotated.body.key, /^whk_[0-9a-f]{16}_/);
    assert.equal(rotated.body.previousKeysExpireAt, new Date(s.clock.nowMs() + 600_000).toISOString());
    const fresh = rotated.body.key as string;
    assert.equal((await s.request("GET", "/v1/subscriptions", { key: fresh })).status, 200);
    assert.equal((await s.request("GET", "/v1/subscriptions", { key: old })).status, 200, "overlap");
    s.clock.advance(599_999);
    assert.equal(
      (await s.request("GET", "/v1/subscriptions", { key: old })).status,
      200,
      "still the overlap",
    );
    s.clock.advance(1);
    assertProblem(await s.request("GET", "/v1/subscriptions", { key: old }), 401, "AUTH_INVALID");
    assert.equal((await s.request("GET", "/v1/subscriptions", { key: fresh })).status, 200);
    for (const body of [{ expiresInS: -1 }, { expiresInS: 1.5 }, { expiresInS: 604_801 }, { overlap: 1 }]) {
      const bad = await s.request("POST", `/v1/admin/tenants/${id}/api-keys/rotate`, {
        key: ADMIN_TOKEN,
        body,
      });
      const problem = assertProblem(bad, 400, "REQUEST_INVALID");
      assert.ok(
        problemFields(problem).some((f) => f.startsWith("/body")),
        JSON.stringify(problem),
      );
    }
    const missing = await s.request("POST", "/v1/admin/tenants/nobody/api-keys/rotate", {
      key: ADMIN_TOKEN,
      body: {},
    });
    assertProblem(missing, 404, "WEBHOOK_TENANT_NOT_FOUND");
  });

  it("revoke is immediate and shows in the listing; issue adds a key beside the others", async (s) => {
    const { id, key } = await s.tenant();
    const second = await s.request("POST", `/v1/admin/tenants/${id}/api-keys`, { key: ADMIN_TOKEN });
    assert.equal(second.status, 201);
    const prefix = key.split("_").slice(0, 2).join("_");
    assert.equal(
      (await s.request("DELETE", `/v1/admin/tenants/${id}/api-keys/${prefix}`, { key: ADMIN_TOKEN })).status,
      204,
    );
    assertProblem(await s.request("GET", "/v1/subscriptions", { key }), 401, "AUTH_INVALID");
    assert.equal((await s.request("GET", "/v1/subscriptions", { key: second.body.key })).status, 200);
    const listed = await s.request("GET", `/v1/admin/tenants/${id}/api-keys`, { key: ADMIN_TOKEN });
    const revoked = listed.body.keys.find((k: { prefix: string }) => k.prefix === prefix);
    assert.equal(revoked.revokedAt, new Date(s.clock.nowMs()).toISOString());
  });
});

/**
 * A tenant's settings after its creation, through the admin API: read them, change only the
 * fields given, and the change is in force on this replica at once — its key cache (whose
 * entries carry the quota) is cleared by the change, not left to its TTL. Bad input is a 400
 * naming the field; an unknown tenant a 404; nothing changes on a refused request.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

const ADMIN = "admin-token-for-the-tenant-settings-tests";
let f: GatewayFixture;

before(async () => {
  f = await startGateway({
    models: "gpt-4o-mini",
    // A minute: longer than the test, so only the change's own clear can put a new quota in force.
    // An hour's budget window: at a minute's, a test that crossed the minute saw its filled budget
    // start afresh (windows are aligned to the clock), and the refusal it waits for never came.
    env: {
      LLM_GATEWAY_ADMIN_TOKEN: ADMIN,
      LLM_GATEWAY_KEY_CACHE_TTL_MS: "60000",
      LLM_GATEWAY_BUDGET_WINDOW_MS: "3600000",
    },
  });
});
after(() => f?.close());

function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${f.gateway.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function createTenant(id: string, settings: Record<string, unknown>): Promise<OpenAI> {
  const res = await admin("POST", "/v1/admin/tenants", { id, name: id, ...settings });
  assert.equal(res.status, 201, await res.clone().text());
  const { apiKey } = (await res.json()) as { apiKey: { key: string } };
  return new OpenAI({ baseURL: `${f.gateway.url}/v1`, apiKey: apiKey.key, maxRetries: 0 });
}

const ask = (client: OpenAI) =>
  client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 5,
  });

test("GET shows a tenant's settings; PATCH changes only the fields given, and null removes the money budget", async () => {
  await createTenant("settings-a", { rpm: 10, tpm: 5_000, spendLimitUsd: 2.5, acceptsModelFallback: false });
  const read = await admin("GET", "/v1/admin/tenants/settings-a");
  assert.equal(read.status, 200);
  assert.deepEqual(await read.json(), {
    id: "settings-a",
    name: "settings-a",
    rpm: 10,
    tpm: 5_000,
    spendLimitUsd: 2.5,
    acceptsModelFallback: false,
  });
  const changed = await admin("PATCH", "/v1/admin/tenants/settings-a", { tpm: 9_000, spendLimitUsd: null });
  assert.equal(changed.status, 200, await changed.clone().text());
  const expected = {
    id: "settings-a",
    name: "settings-a",
    rpm: 10,
    tpm: 9_000,
    spendLimitUsd: null,
    acceptsModelFallback: false,
  };
  assert.deepEqual(await changed.json(), expected);
  assert.deepEqual(await (await admin("GET", "/v1/admin/tenants/settings-a")).json(), expected);
});

test("a quota raised through PATCH is in force at once, though the tenant's key is cached for a minute", async () => {
  const client = await createTenant("settings-b", { rpm: 1, tpm: 1_000_000 });
  await ask(client);
  await assert.rejects(ask(client), (error: unknown) => error instanceof OpenAI.RateLimitError);
  const raised = await admin("PATCH", "/v1/admin/tenants/settings-b", { rpm: 100 });
  assert.equal(raised.status, 200, await raised.text());
  const answer = await ask(client);
  assert.equal(answer.object, "chat.completion", "served under the new quota, not the cached one");
});

test("bad changes are 400s naming the field and change nothing; an unknown tenant is 404", async () => {
  await createTenant("settings-c", { rpm: 7, tpm: 700 });
  const cases: [body: unknown, field: RegExp][] = [
    [{}, /body/],
    [{ rpm: "100" }, /rpm/],
    [{ rpm: 0 }, /rpm/],
    [{ tpm: 1.5 }, /tpm/],
    [{ spendLimitUsd: 0 }, /spendLimitUsd/],
    [{ acceptsModelFallback: "no" }, /acceptsModelFallback/],
    [{ id: "other" }, /id/],
  ];
  for (const [body, field] of cases) {
    const res = await admin("PATCH", "/v1/admin/tenants/settings-c", body);
    const text = await res.text();
    assert.equal(res.status, 400, `${JSON.stringify(body)}: ${text}`);
    assert.match(text, field, JSON.stringify(body));
  }
  const after = (await (await admin("GET", "/v1/admin/tenants/settings-c")).json()) as {
    rpm: number;
    tpm: number;
  };
  assert.deepEqual([after.rpm, after.tpm], [7, 700], "nothing changed");
  for (const [method, body] of [
    ["GET", undefined],
    ["PATCH", { rpm: 5 }],
  ] as const) {
    const res = await admin(method, "/v1/admin/tenants/no-such-tenant", body);
    assert.equal(res.status, 404);
    assert.match(await res.text(), /LLM_TENANT_NOT_FOUND/);
  }
  const unauthorized = await fetch(`${f.gateway.url}/v1/admin/tenants/settings-c`, { method: "GET" });
  assert.equal(unauthorized.status, 401);
  await unauthorized.body?.cancel();
});

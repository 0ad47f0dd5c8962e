/**
 * API keys through the running service: verified keys are remembered for
 * METRICS_KEY_CACHE_TTL_MS (kit's VerifiedKeyCache), and a revocation through the admin API
 * still ends a key at once — the cache is cleared by the admin route, not left to its TTL.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { main, type RunningSystem } from "../src/main.ts";

const ADMIN_TOKEN = "admin-token-for-the-key-tests";

let running: RunningSystem;
let dataDir: string;
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-keys-"));
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_ADMIN_TOKEN: ADMIN_TOKEN,
    METRICS_KEY_CACHE_TTL_MS: "60000", // far longer than the test: only a cleared cache can refuse the key
  });
});
after(async () => {
  await running?.close();
  await rm(dataDir, { recursive: true, force: true });
});

function query(key: string): Promise<Response> {
  return fetch(`${running.url}/api/v1/query?query=up`, { headers: { authorization: `Bearer ${key}` } });
}

function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${running.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

test("a key revoked through the admin API is refused at once, though verified keys are cached for a minute", async () => {
  const created = await admin("POST", "/v1/admin/tenants", { id: "keys-a", name: "Keys A" });
  assert.equal(created.status, 201, await created.clone().text());
  const { apiKey } = (await created.json()) as { apiKey: { key: string; prefix: string } };
  for (let i = 0; i < 3; i++)
    assert.equal((await query(apiKey.key)).status, 200, "the key works (then from memory)");
  const revoked = await admin("DELETE", `/v1/admin/tenants/keys-a/api-keys/${apiKey.prefix}`);
  assert.equal(revoked.status, 204, await revoked.text());
  const after = await query(apiKey.key);
  assert.equal(after.status, 401, "revoked here: refused now, not at the cache's TTL");
  await after.body?.cancel();
});

test("a rotation forgets cached keys too; the new key works and the old one until its overlap ends", async () => {
  const created = await admin("POST", "/v1/admin/tenants", { id: "keys-b", name: "Keys B" });
  const { apiKey } = (await created.json()) as { apiKey: { key: string } };
  assert.equal((await query(apiKey.key)).status, 200);
  const rotated = await admin("POST", "/v1/admin/tenants/keys-b/api-keys/rotate", { expiresInS: 3600 });
  assert.equal(rotated.status, 201, await rotated.clone().text());
  const { key } = (await rotated.json()) as { key: string };
  assert.equal((await query(key)).status, 200, "the new key");
  assert.equal((await query(apiKey.key)).status, 200, "the old key, within its overlap");
});

test("a made-up key is 401 every time", async () => {
  for (let i = 0; i < 3; i++) {
    const res = await query("mtk_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    assert.equal(res.status, 401);
    await res.body?.cancel();
  }
});

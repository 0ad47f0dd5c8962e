/**
 * LG-14: the gateway keeps no state of its own that a replica needs — the key and quota table,
 * the semantic cache and the usage rows live in PostgreSQL, the token counter in Redis — so two
 * gateway processes on one PostgreSQL and one Redis answer as one. What each replica does keep
 * is a cache with a stated bound: a checked key is trusted from memory for
 * `LLM_GATEWAY_KEY_CACHE_TTL_MS` (a key revoked through one replica works on another for at
 * most that long), and the breakers are per replica (README). Skips without PostgreSQL or Redis.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { SpawnedChild } from "@casebook/lab/spawn-child";
import { uniqueName } from "@casebook/lab/test-engines";
import { CACHE_HEADER } from "../src/api/semantic-cache.ts";
import { startReplicas } from "./replica-fixture.ts";

const KEY_CACHE_TTL_MS = 1_000;
const WAIT_BOUND_MS = 20_000;

async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + WAIT_BOUND_MS;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${WAIT_BOUND_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

test("LG-14 two gateway processes on one PostgreSQL and one Redis answer as one: keys, quota counter, semantic cache and usage are shared; a replica killed loses nothing the other needs", async (t) => {
  const world = await startReplicas(t, {
    prefix: "llm_replicas",
    count: 2,
    seed: 14,
    profile: { ttftMs: 5, tokensPerS: 5_000 },
    env: { LLM_GATEWAY_KEY_CACHE_TTL_MS: String(KEY_CACHE_TTL_MS) },
  });
  if (world === undefined) return;
  const [a, b] = world.replicas as [SpawnedChild, SpawnedChild];
  const [urlA, urlB] = world.urls as [string, string];

  // Tenants made after both replicas started, straight in the shared table.
  const { tenants } = world;
  const id = (name: string) => uniqueName(name).replaceAll(/[^A-Za-z0-9_-]/g, "_");
  const roomy = await tenants.createIfAbsent({ id: id("roomy"), name: "roomy", rpm: 1_000, tpm: 1_000_000 });
  const once = await tenants.createIfAbsent({ id: id("once"), name: "once", rpm: 1, tpm: 1_000_000 });
  assert.ok(roomy && once);
  const ask = (url: string, key: string, content: string) =>
    fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${key}` },
      body: JSON.stringify({ model: "gpt-4o-mini", temperature: 0, messages: [{ role: "user", content }] }),
    });
  const usageRequests = async (url: string, key: string) => {
    const res = await fetch(`${url}/v1/usage`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const usage = (await res.json()) as { models: Array<{ requests: number; cacheHits: number }> };
    return {
      requests: usage.models.reduce((sum, m) => sum + m.requests, 0),
      cacheHits: usage.models.reduce((sum, m) => sum + m.cacheHits, 0),
    };
  };

  // The key table: a key issued by neither replica works on both.
  const prompt = "Name the three primary colours of light";
  const first = await ask(urlA, roomy.apiKey.key, prompt);
  assert.equal(first.status, 200);
  assert.equal(first.headers.get(CACHE_HEADER), "miss");
  const answered = ((await first.json()) as { choices: Array<{ message: { content: string } }> }).choices[0]
    ?.message.content;

  // The semantic cache: what replica A stored, replica B answers from.
  const fromB = await until("B answers A's cached entry", async () => {
    const res = await ask(urlB, roomy.apiKey.key, prompt);
    assert.equal(res.status, 200);
    const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
    return /^hit;/.test(res.headers.get(CACHE_HEADER) ?? "") ? body : undefined;
  });
  assert.equal(fromB.choices[0]?.message.content, answered, "the same answer, from the shared cache");

  // The quota counter: one request a window for `once`, taken on A, is gone on B.
  assert.equal((await ask(urlA, once.apiKey.key, "first of the window")).status, 200);
  const refused = await ask(urlB, once.apiKey.key, "second of the window, on the other replica");
  assert.equal(refused.status, 429, "the counter is shared, not per replica");
  assert.ok(Number(refused.headers.get("retry-after")) > 0);

  // Usage: the rows A wrote are read through B; then A dies and B keeps serving.
  await until("A's usage rows are visible through B", async () => {
    const seen = await usageRequests(urlB, roomy.apiKey.key);
    return seen.requests >= 2 && seen.cacheHits >= 1 ? seen : undefined;
  });
  await a.kill("SIGKILL");
  const after = await ask(urlB, roomy.apiKey.key, "Anything new after the other replica died?");
  assert.equal(after.status, 200, "the survivor needs nothing the dead replica held");
  assert.equal((await ask(urlB, once.apiKey.key, "still the same window")).status, 429);

  // The per-replica cache's bound: a key revoked through the table stops working on B within its TTL.
  await world.db.query("DELETE FROM tenant_api_keys WHERE tenant_id = $1", [roomy.tenant.id]);
  await until("the revoked key is refused by B", async () =>
    (await ask(urlB, roomy.apiKey.key, "after revocation")).status === 401 ? true : undefined,
  );
  await b.stop();
});

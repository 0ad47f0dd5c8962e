/**
 * The counter down (the "Redis down: the configured fail mode"): budgets fail closed —
 * a request the gateway cannot meter is refused with 503 in OpenAI's shape and never reaches
 * the provider; `/readyz` says so; once Redis is back, requests pass again. On a private
 * redis-server, killed and restarted by the test.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { spawnRedis } from "@casebook/lab/spawn-redis";
import OpenAI from "openai";
import { startGateway } from "./gateway-fixture.ts";

test("Redis down: requests fail closed with 503, nothing reaches the provider; back up, they pass", async (t) => {
  const redis = await spawnRedis();
  t.after(() => redis.stop());
  const f = await startGateway({ env: { REDIS_URL: redis.url, LLM_GATEWAY_REDIS_TIMEOUT_MS: "2000" } });
  t.after(() => f.close());
  const messages = [{ role: "user" as const, content: "hi" }];
  await f.client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 3 });
  const upstreamBefore = ((await (await fetch(`${f.simUrl}/admin/stats`)).json()) as { requests: number })
    .requests;
  await redis.kill();
  await assert.rejects(
    f.client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 3 }),
    (error: unknown) =>
      error instanceof OpenAI.APIError && error.status === 503 && error.code === "llm_budget_unavailable",
  );
  const upstreamAfter = ((await (await fetch(`${f.simUrl}/admin/stats`)).json()) as { requests: number })
    .requests;
  assert.equal(upstreamAfter, upstreamBefore);
  assert.equal((await fetch(`${f.gateway.url}/readyz`)).status, 503);
  await redis.restart();
  await eventually(
    async () =>
      (await f.client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 3 })).object,
    { what: "a request to pass once Redis is back", timeoutMs: 60_000, intervalMs: 250 },
  );
});

test("Redis down with LLM_GATEWAY_BUDGET_FAIL_MODE=open: requests pass unmetered, counted and logged; /readyz still says the counter is down", async (t) => {
  const redis = await spawnRedis();
  t.after(() => redis.stop());
  const f = await startGateway({
    env: { REDIS_URL: redis.url, LLM_GATEWAY_REDIS_TIMEOUT_MS: "2000", LLM_GATEWAY_BUDGET_FAIL_MODE: "open" },
  });
  t.after(() => f.close());
  const messages = [{ role: "user" as const, content: "hi" }];
  await f.client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 3 });
  await redis.kill();
  const answer = await f.client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 3 });
  assert.equal(answer.object, "chat.completion");
  const metrics = await (await fetch(`${f.gateway.url}/metrics`)).text();
  assert.match(metrics, /^llm_gateway_unmetered_total\{budget="tokens"\} 1$/m);
  assert.equal((await fetch(`${f.gateway.url}/readyz`)).status, 503);
});

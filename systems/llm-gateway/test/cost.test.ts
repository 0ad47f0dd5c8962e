/**
 * Cost per tenant and model from the price table, the usage API, money budgets, and the
 * provider's prompt caching accounted at its price (LG-13) — through the `openai` SDK.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { costNanoUsd, parsePriceList } from "../src/domain/pricing.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

const ADMIN = "admin-token-for-the-cost-tests-0123456789";
const PRICES = "gpt-4o=2.5/1.25/10,gpt-4o-mini=0.15/0.075/0.6";
const prices = parsePriceList(PRICES);
let f: GatewayFixture;
before(async () => {
  f = await startGateway({
    models: "gpt-4o-mini,gpt-4o",
    env: { LLM_GATEWAY_ADMIN_TOKEN: ADMIN, LLM_GATEWAY_PRICES: PRICES },
    profile: { answerTokens: 10 },
  });
});
after(() => f?.close());

async function tenant(id: string, extra: Record<string, unknown> = {}): Promise<OpenAI> {
  const res = await fetch(`${f.gateway.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ id, name: id, ...extra }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const { apiKey } = (await res.json()) as { apiKey: { key: string } };
  return new OpenAI({ baseURL: `${f.gateway.url}/v1`, apiKey: apiKey.key, maxRetries: 0 });
}

interface UsageRow {
  model: string;
  servedBy: string | null;
  requests: number;
  cacheHits: number;
  promptTokens: number;
  cachedPromptTokens: number;
  completionTokens: number;
  costUsd: number;
}

async function usage(client: OpenAI): Promise<{ totalCostUsd: number; models: UsageRow[] }> {
  return client.get("/usage");
}

const nano = (usd: number) => Math.round(usd * 1e9);

test("cost per tenant and model from the price table; the usage API sums it", async () => {
  const client = await tenant("coster");
  const expected = new Map<string, number>();
  for (const model of ["gpt-4o-mini", "gpt-4o", "gpt-4o"]) {
    const answer = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: `Hello ${model}` }],
    });
    const u = answer.usage as OpenAI.CompletionUsage;
    const cost = costNanoUsd(prices.get(model)!, {
      promptTokens: u.prompt_tokens,
      cachedPromptTokens: 0,
      completionTokens: u.completion_tokens,
    });
    expected.set(model, (expected.get(model) ?? 0) + cost);
  }
  const report = await usage(client);
  assert.deepEqual(
    report.models.map((r) => [r.model, r.servedBy, r.requests, nano(r.costUsd)]),
    [
      ["gpt-4o", "gpt-4o@default", 2, expected.get("gpt-4o")],
      ["gpt-4o-mini", "gpt-4o-mini@default", 1, expected.get("gpt-4o-mini")],
    ],
  );
  assert.equal(nano(report.totalCostUsd), (expected.get("gpt-4o") ?? 0) + (expected.get("gpt-4o-mini") ?? 0));
  // Another tenant's usage is its own.
  assert.deepEqual((await usage(await tenant("idle"))).models, []);
});

test("LG-13 the provider's prompt caching is the provider's: the gateway sends both requests and bills the cached prompt tokens at their price", async () => {
  const client = await tenant("long-prompts");
  const longPrompt = Array.from({ length: 1_400 }, (_, i) => `word${i}`).join(" ");
  const messages = [{ role: "user" as const, content: longPrompt }];
  const before = (await f.generations()).length;
  const first = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
  const second = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
  assert.equal(
    (await f.generations()).length,
    before + 2,
    "no answer reused by the gateway (temperature unset)",
  );
  assert.equal(first.usage?.prompt_tokens_details?.cached_tokens, 0);
  const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
  assert.ok(cached >= 1_024 && cached % 128 === 0, `cached ${cached}`);
  const price = prices.get("gpt-4o-mini")!;
  const cost = (u: OpenAI.CompletionUsage) =>
    costNanoUsd(price, {
      promptTokens: u.prompt_tokens,
      cachedPromptTokens: u.prompt_tokens_details?.cached_tokens ?? 0,
      completionTokens: u.completion_tokens,
    });
  const report = await usage(client);
  const row = report.models[0] as UsageRow;
  assert.equal(row.cachedPromptTokens, cached);
  assert.equal(nano(row.costUsd), cost(first.usage!) + cost(second.usage!));
  assert.ok(cost(second.usage!) < cost(first.usage!), "cached prompt tokens cost less");
});

test("a semantic cache hit costs nothing and is counted as a hit", async () => {
  const client = await tenant("hitter");
  const ask = () =>
    client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "What is 7*6?" }],
      temperature: 0,
    });
  await ask();
  await ask();
  const rows = (await usage(client)).models;
  const hit = rows.find((r) => r.servedBy === null);
  assert.deepEqual([hit?.requests, hit?.cacheHits, hit?.costUsd], [1, 1, 0]);
});

test("a money budget per tenant: past its spend limit the answer is 429 insufficient_quota, with Retry-After", async () => {
  // gpt-4o: a 10-token answer costs ~$0.0001; the most a request with max_tokens 10 can cost is reserved first.
  const client = await tenant("thrifty", { spendLimitUsd: 0.0005 });
  let refused: unknown;
  for (let i = 0; i < 10 && refused === undefined; i++) {
    await client.chat.completions
      .create({ model: "gpt-4o", messages: [{ role: "user", content: "Hello there" }], max_tokens: 10 })
      .catch((error: unknown) => {
        refused = error;
      });
  }
  assert.ok(refused instanceof OpenAI.RateLimitError, String(refused));
  assert.equal(refused.code, "insufficient_quota");
  assert.ok(Number(refused.headers.get("retry-after")) > 0);
  const spent = nano((await usage(client)).totalCostUsd);
  assert.ok(spent <= nano(0.0005), `spent ${spent} n$ of 500,000`);
});

test("LG-18 the gateway never groups requests: concurrent requests reach the provider one by one, each with its own prompt", async () => {
  const client = await tenant("batcher");
  const before = (await f.generations()).length;
  const prompts = Array.from({ length: 6 }, (_, i) => `Question number ${i}`);
  await Promise.all(
    prompts.map((content) =>
      client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content }] }),
    ),
  );
  const sent = (await f.generations()).slice(before);
  assert.equal(sent.length, prompts.length, "one upstream request per client request");
  for (const generation of sent) assert.equal(generation.model, "gpt-4o-mini");
});

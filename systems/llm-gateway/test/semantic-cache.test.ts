/**
 * The semantic cache through the API with the `openai` SDK (LG-11, LG-12): a deterministic
 * request's answer serves a later paraphrase of the same tenant without calling the
 * provider (whole or streamed), never a near-identical prompt that asks something else,
 * never another tenant; non-deterministic requests are never cached.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { CACHE_HEADER } from "../src/api/semantic-cache.ts";
import { DEFAULT_CACHE_THRESHOLD } from "../src/config.ts";
import { promptText } from "../src/domain/cache-policy.ts";
import { cosine, embedText } from "../src/domain/lexical-embedder.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";
import { madeUpPrompt } from "./made-up-prompt.ts";

const ADMIN = "admin-token-for-the-cache-tests-0123456789";
let f: GatewayFixture;
before(async () => {
  f = await startGateway({ env: { LLM_GATEWAY_ADMIN_TOKEN: ADMIN } });
});
after(() => f?.close());

const ask = (
  content: string,
  extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {},
  client = f.client,
) =>
  client.chat.completions
    .create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content }],
      temperature: 0,
      max_tokens: 8,
      ...extra,
    })
    .withResponse();

async function upstreamCalls(): Promise<number> {
  return (await f.generations()).length;
}

test("LG-11 a paraphrase of a deterministic request is answered from the cache; the provider is not called", async () => {
  const first = await ask("What is the capital of France?");
  assert.equal(first.response.headers.get(CACHE_HEADER), "miss");
  const calls = await upstreamCalls();
  const again = await ask("what's the capital of france");
  assert.match(again.response.headers.get(CACHE_HEADER) ?? "", /^hit; similarity=1\.0000$/);
  assert.equal(again.data.choices[0]?.message.content, first.data.choices[0]?.message.content);
  assert.equal(again.data.object, "chat.completion");
  // Streamed, the same answer is replayed as chunks.
  const stream = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "What is the capital of France" }],
    temperature: 0,
    max_tokens: 8,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let usage: OpenAI.CompletionUsage | undefined | null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    usage ??= chunk.usage;
  }
  assert.equal(text, first.data.choices[0]?.message.content);
  assert.equal(usage?.completion_tokens, first.data.usage?.completion_tokens);
  assert.equal(await upstreamCalls(), calls, "no provider call for the hits");
});

test('LG-11 a near-identical prompt that asks something else is not a hit ("2+2" vs "2+3")', async () => {
  await ask("What is 2+2?");
  const calls = await upstreamCalls();
  const other = await ask("What is 2+3?");
  assert.equal(other.response.headers.get(CACHE_HEADER), "miss");
  assert.equal(await upstreamCalls(), calls + 1);
});

test("LG-11 always separated by tenant: another tenant's identical prompt goes to the provider", async () => {
  const res = await fetch(`${f.gateway.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ id: "globex", name: "globex" }),
  });
  const { apiKey } = (await res.json()) as { apiKey: { key: string } };
  const globex = new OpenAI({ baseURL: `${f.gateway.url}/v1`, apiKey: apiKey.key, maxRetries: 0 });
  await ask("Write a haiku about the sea");
  const answer = await ask("Write a haiku about the sea", {}, globex);
  assert.equal(answer.response.headers.get(CACHE_HEADER), "miss");
  assert.equal(
    (await ask("Write a haiku about the sea", {}, globex)).response.headers
      .get(CACHE_HEADER)
      ?.startsWith("hit"),
    true,
  );
});

test("LG-12 only deterministic requests are cached: temperature above 0 (or unset), tools, no-store", async () => {
  for (const extra of [{ temperature: 0.7 }, { temperature: undefined }]) {
    await ask("Is 17 a prime number?", extra);
    const again = await ask("Is 17 a prime number?", extra);
    assert.equal(again.response.headers.get(CACHE_HEADER), "skip; temperature is not 0");
  }
  const tools: OpenAI.ChatCompletionTool[] = [
    { type: "function", function: { name: "send_email", parameters: { type: "object", properties: {} } } },
  ];
  await ask("Email Bob the report", { tools });
  assert.equal(
    (await ask("Email Bob the report", { tools })).response.headers.get(CACHE_HEADER),
    "skip; tools",
  );
  await ask("What time is it?");
  const fresh = await f.client.chat.completions
    .create(
      {
        model: "gpt-4o-mini",
        messages: [{ role: "user", content: "What time is it?" }],
        temperature: 0,
        max_tokens: 8,
      },
      { headers: { "cache-control": "no-store" } },
    )
    .withResponse();
  assert.equal(fresh.response.headers.get(CACHE_HEADER), "skip; Cache-Control: no-store");
  // Another max_tokens is another scope: not a hit.
  await ask("Explain recursion to a child");
  assert.equal(
    (await ask("Explain recursion to a child", { max_tokens: 9 })).response.headers.get(CACHE_HEADER),
    "miss",
  );
});

test("LG-11 two unrelated long prompts the embedder rates above the threshold are not a hit: their words disagree", async () => {
  // A pair of 200-word prompts whose embeddings are at least the default threshold alike.
  let pair: [string, string] | undefined;
  for (let i = 1; i < 200 && pair === undefined; i += 2) {
    const [a, b] = [madeUpPrompt(i, 200), madeUpPrompt(i + 1, 200)];
    const similarity = cosine(
      embedText(promptText([{ role: "user", content: a }])),
      embedText(promptText([{ role: "user", content: b }])),
    );
    if (similarity >= DEFAULT_CACHE_THRESHOLD) pair = [a, b];
  }
  assert.ok(pair, "the embedder rates some unrelated long prompts above the threshold");
  assert.equal((await ask(pair[0])).response.headers.get(CACHE_HEADER), "miss");
  const calls = await upstreamCalls();
  const second = await ask(pair[1]);
  assert.equal(second.response.headers.get(CACHE_HEADER), "miss", "not the other prompt's answer");
  assert.equal(await upstreamCalls(), calls + 1, "the provider answered it");
  const metrics = await (await fetch(`${f.gateway.url}/metrics`)).text();
  assert.match(metrics, /llm_gateway_cache_lookups_total\{model="gpt-4o-mini",result="refused"\} [1-9]/);
  // The same long prompt again is still a hit.
  assert.match((await ask(pair[0])).response.headers.get(CACHE_HEADER) ?? "", /^hit;/);
});

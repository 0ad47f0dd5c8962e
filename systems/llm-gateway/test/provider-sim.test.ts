/**
 * The provider simulator on real HTTP, read with the official `openai` SDK where a client
 * is involved: OpenAI's chat completions (stream and not, the chunk sequence of the real
 * API, `stream_options.include_usage`), Anthropic's Messages event sequence, its own token
 * counts, 429s with Retry-After, errors in OpenAI's shape, stream cuts, and what it counts
 * when a client closes mid-stream.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { eventually } from "@casebook/lab/eventually";
import OpenAI from "openai";
import { defaultModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "../src/sim/provider-sim.ts";
import { countChatTokens } from "../src/sim/sim-tokenizer.ts";

let sim: ProviderSim;
let url: string;
let client: OpenAI;

before(async () => {
  sim = createProviderSim({
    rng: seededRandom(1),
    log: { level: "silent" },
    behaviour: { models: { "gpt-4o-mini": { ...defaultModelProfile, ttftMs: 5, tokensPerS: 2_000 } } },
  });
  ({ url } = await sim.listen({ port: 0 }));
  client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "sk-unused", maxRetries: 0, timeout: 30_000 });
});
after(() => sim.close());

async function setModel(model: string, patch: Partial<typeof defaultModelProfile>) {
  const res = await fetch(`${url}/admin/models/${model}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(patch),
  });
  assert.equal(res.status, 200, await res.text());
}

async function streams() {
  const res = await fetch(`${url}/admin/streams?limit=1000`);
  return ((await res.json()) as { streams: Array<{ id: string; generatedTokens: number; end: string }> })
    .streams;
}

const messages = [{ role: "user" as const, content: "What is the capital of France?" }];

test("a non-streamed completion has the chat.completion shape and usage from the simulator's tokenizer", async () => {
  const completion = await client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 10 });
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.choices[0]?.finish_reason, "length");
  assert.equal(completion.usage?.prompt_tokens, countChatTokens(messages));
  assert.equal(completion.usage?.completion_tokens, 10);
  assert.equal(completion.usage?.total_tokens, countChatTokens(messages) + 10);
});

test("the same prompt gets the same answer (deterministic), another prompt another", async () => {
  const a = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
  const b = await client.chat.completions.create({ model: "gpt-4o-mini", messages });
  const c = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "What is 2+3?" }],
  });
  assert.equal(a.choices[0]?.message.content, b.choices[0]?.message.content);
  assert.notEqual(a.choices[0]?.message.content, c.choices[0]?.message.content);
  assert.equal(a.choices[0]?.finish_reason, "stop");
});

test("a stream is the real API's chunk sequence: role, content deltas, finish, usage chunk, [DONE]", async () => {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      messages,
      max_tokens: 5,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const text = await res.text();
  const events = text.split("\n\n").filter((e) => e !== "");
  assert.ok(
    events.every((e) => e.startsWith("data: ")),
    text,
  );
  assert.equal(events.at(-1), "data: [DONE]");
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)));
  assert.deepEqual(chunks[0].choices[0].delta, { role: "assistant", content: "", refusal: null });
  assert.equal(chunks[0].usage, null);
  const deltas = chunks.slice(1, 6);
  assert.equal(deltas.length, 5);
  for (const chunk of deltas) assert.equal(typeof chunk.choices[0].delta.content, "string");
  assert.equal(chunks[6].choices[0].finish_reason, "length");
  assert.deepEqual(chunks[7].choices, []);
  assert.equal(chunks[7].usage.completion_tokens, 5);
  assert.equal(chunks.length, 8);
});

test("the openai SDK reads the stream and its usage", async () => {
  const stream = await client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = "";
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    content += chunk.choices[0]?.delta.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(usage?.completion_tokens, defaultModelProfile.answerTokens);
  assert.equal(content.split(" ").length - 1, defaultModelProfile.answerTokens);
});

test("Anthropic Messages stream: message_start … message_stop, usage in and out", async () => {
  const res = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "gpt-4o-mini",
      max_tokens: 3,
      stream: true,
      messages,
      system: "Be brief.",
    }),
  });
  assert.equal(res.status, 200);
  const events = (await res.text())
    .split("\n\n")
    .filter((e) => e !== "")
    .map((e) => /^event: (\w+)\ndata: (.*)$/s.exec(e)?.slice(1) ?? []);
  assert.deepEqual(
    events.map(([name]) => name),
    [
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ],
  );
  const start = JSON.parse(events[0]?.[1] ?? "{}");
  assert.equal(start.message.usage.input_tokens, countChatTokens(messages, "Be brief."));
  const delta = JSON.parse(events[7]?.[1] ?? "{}");
  assert.deepEqual(delta.delta, { stop_reason: "max_tokens", stop_sequence: null });
  assert.equal(delta.usage.output_tokens, 3);
});

test("errors are in OpenAI's shape: unknown model 404, max_tokens over the limit 400 naming the param", async () => {
  await assert.rejects(
    client.chat.completions.create({ model: "no-such-model", messages }),
    (error: unknown) => error instanceof OpenAI.NotFoundError && error.code === "model_not_found",
  );
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 1_000_000 }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "max_tokens",
  );
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ content: "no role" }] }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { error: { type: string; param: string } };
  assert.equal(body.error.type, "invalid_request_error");
  assert.equal(body.error.param, "messages[0].role");
});

test("a 429 carries Retry-After and the SDK's RateLimitError", async () => {
  await setModel("limited", { rateLimitRate: 1 });
  await assert.rejects(
    client.chat.completions.create({ model: "limited", messages }),
    (error: unknown) =>
      error instanceof OpenAI.RateLimitError &&
      error.code === "rate_limit_exceeded" &&
      error.headers.get("retry-after") === "1",
  );
});

test("a cut stream ends without [DONE] and is recorded as cut with the tokens generated", async () => {
  await setModel("cutting", { cutAfterTokens: 4, ttftMs: 0 });
  const stream = await client.chat.completions.create({ model: "cutting", messages, stream: true });
  let deltas = 0;
  await assert.rejects(async () => {
    for await (const chunk of stream) if (chunk.choices[0]?.delta.content) deltas += 1;
  });
  assert.equal(deltas, 4);
  const last = (await streams()).at(-1);
  assert.equal(last?.end, "cut");
  assert.equal(last?.generatedTokens, 4);
});

test("a client closing mid-stream: the simulator stops and records the tokens it generated", async () => {
  await setModel("slow", { ttftMs: 0, tokensPerS: 50, answerTokens: 10_000 });
  const stream = await client.chat.completions.create({ model: "slow", messages, stream: true });
  let received = 0;
  // Leaving the loop is how an SDK user closes a stream: the SDK aborts the request.
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) received += 1;
    if (received === 3) break;
  }
  const leftAt = Date.now();
  const record = await eventually(async () => (await streams()).at(-1), {
    what: "the simulator to see the close",
    timeoutMs: 30_000,
    accept: (last) => last?.end === "client-closed",
  });
  // Tokens in flight when the close landed: a second's worth at 50 tokens/s, and what a stall of
  // the loaded host adds (the simulator catches up on what it owes) — never the 10,000 of the answer.
  const bound = 3 + Math.ceil(((Date.now() - leftAt) / 1_000 + 1) * 50);
  assert.ok((record?.generatedTokens ?? 0) < bound, `generated ${record?.generatedTokens} (bound ${bound})`);
  const stats = (await (await fetch(`${url}/admin/stats`)).json()) as Record<string, number>;
  assert.equal(stats.openStreams, 0);
});

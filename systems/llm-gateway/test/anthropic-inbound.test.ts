/**
 * Anthropic's Messages API inbound (`POST /v1/messages`) with the official `@anthropic-ai/sdk`
 * (1.16.0) as the client, unmodified: a whole message, a stream of Anthropic's events (text
 * deltas as the provider generates them, the stop reason and usage at the end), errors in
 * Anthropic's shape, and the same budgets, cache and routing behind it as the OpenAI route.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { CACHE_HEADER } from "../src/api/semantic-cache.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

let f: GatewayFixture;
let client: Anthropic;
before(async () => {
  f = await startGateway({ models: "claude=gpt-4o-mini,gpt-4o-mini", profile: { answerTokens: 12 } });
  client = new Anthropic({ baseURL: f.gateway.url, apiKey: f.apiKey, maxRetries: 0 });
});
after(() => f?.close());

test("a whole message: Anthropic's shape, the answer's text, stop reason and usage", async () => {
  const message = await client.messages.create({
    model: "claude",
    max_tokens: 5,
    system: "Be brief.",
    messages: [{ role: "user", content: "Say something short." }],
  });
  assert.equal(message.type, "message");
  assert.equal(message.role, "assistant");
  assert.equal(message.stop_reason, "max_tokens");
  assert.equal(message.usage.output_tokens, 5);
  assert.ok(message.usage.input_tokens > 0);
  const block = message.content[0];
  assert.ok(block?.type === "text" && block.text.length > 0);
  const sent = (await f.generations()).at(-1);
  assert.equal(sent?.model, "gpt-4o-mini", "the logical name mapped as on the OpenAI route");
});

test("a stream: Anthropic's events in order, text deltas as generated, then stop reason and usage", async () => {
  const stream = client.messages.stream({
    model: "claude",
    max_tokens: 50,
    messages: [{ role: "user", content: [{ type: "text", text: "Tell me a story." }] }],
  });
  const events: string[] = [];
  let text = "";
  for await (const event of stream) {
    if (events.at(-1) !== event.type) events.push(event.type);
    if (event.type === "content_block_delta" && event.delta.type === "text_delta") text += event.delta.text;
  }
  const final = await stream.finalMessage();
  assert.deepEqual(events, [
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  assert.equal(final.stop_reason, "end_turn");
  assert.equal(final.usage.output_tokens, 12);
  const block = final.content[0];
  assert.ok(block?.type === "text" && block.text === text && text.length > 0);
});

test("errors in Anthropic's shape: unknown model, a missing max_tokens, a wrong key", async () => {
  await assert.rejects(
    client.messages.create({ model: "nope", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    (error: unknown) =>
      error instanceof Anthropic.NotFoundError && (error.error as { type: string }).type === "error",
  );
  const res = await fetch(`${f.gateway.url}/v1/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": f.apiKey, "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "claude", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(res.status, 400);
  const body = (await res.json()) as { type: string; error: { type: string; message: string } };
  assert.equal(body.type, "error");
  assert.equal(body.error.type, "invalid_request_error");
  assert.equal((body.error as { param?: string }).param, "max_tokens");
  assert.match(body.error.message, /max_tokens/);
  const stranger = new Anthropic({
    baseURL: f.gateway.url,
    apiKey: "llm_0000000000000000_wrong",
    maxRetries: 0,
  });
  await assert.rejects(
    stranger.messages.create({ model: "claude", max_tokens: 5, messages: [{ role: "user", content: "hi" }] }),
    (error: unknown) => error instanceof Anthropic.AuthenticationError,
  );
});

test("the semantic cache serves the Anthropic route too (temperature 0), in Anthropic's shape", async () => {
  // temperature is not in this SDK version's types (its newest models take none); the API still takes it.
  const params = {
    model: "claude",
    max_tokens: 8,
    temperature: 0,
    messages: [{ role: "user" as const, content: "What is 5*5?" }],
  };
  const ask = () => client.messages.create(params).withResponse();
  const first = await ask();
  const second = await ask();
  assert.equal(second.response.headers.get(CACHE_HEADER)?.startsWith("hit"), true);
  assert.equal(second.data.type, "message");
  assert.deepEqual(second.data.content, first.data.content);
});

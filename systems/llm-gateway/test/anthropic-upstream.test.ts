/**
 * An Anthropic Messages destination behind the gateway (`anthropic+…` in
 * LLM_GATEWAY_DESTINATIONS), against the provider simulator's `/v1/messages`, with the
 * official `openai` SDK as the client: a whole answer and a stream come back in OpenAI's
 * shapes (content, finish reason, the provider's usage), the system message travels as
 * Anthropic's `system`, and a stream the provider cuts is an error for the client, never a
 * success.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { APIError } from "openai";
import { toAnthropicRequest } from "../src/clients/anthropic-upstream.ts";
import { defaultModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "../src/sim/provider-sim.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

let anthropicSim: ProviderSim;
let anthropicUrl: string;
let f: GatewayFixture;

before(async () => {
  anthropicSim = createProviderSim({
    rng: seededRandom(5),
    log: { level: "silent" },
    behaviour: {
      models: {
        "claude-haiku-4": { ...defaultModelProfile, ttftMs: 5, tokensPerS: 2_000, answerTokens: 12 },
        "claude-cut": {
          ...defaultModelProfile,
          ttftMs: 5,
          tokensPerS: 2_000,
          answerTokens: 40,
          cutAfterTokens: 5,
        },
      },
    },
  });
  anthropicUrl = (await anthropicSim.listen({ port: 0 })).url;
  f = await startGateway({
    models: "gpt-4o-mini,haiku=claude-haiku-4@claude,cut=claude-cut@claude",
    env: { LLM_GATEWAY_DESTINATIONS: `claude=anthropic+${anthropicUrl}/v1` },
  });
});
after(() => Promise.allSettled([f?.close(), anthropicSim?.close()]));

async function anthropicGenerations(): Promise<
  Array<{ model: string; wire: string; promptTokens: number; end: string }>
> {
  const res = await fetch(`${anthropicUrl}/admin/streams?limit=100`);
  return ((await res.json()) as { streams: Awaited<ReturnType<typeof anthropicGenerations>> }).streams;
}

test("OpenAI's chat request becomes Anthropic's: system apart, max_tokens always, stop as stop_sequences", () => {
  const body = toAnthropicRequest(
    {
      model: "claude-haiku-4",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: [{ type: "text", text: "hi" }] },
      ],
      stop: "END",
      temperature: 0,
      stream: true,
    },
    4_096,
  );
  assert.deepEqual(body, {
    model: "claude-haiku-4",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 4_096,
    system: "Be brief.",
    temperature: 0,
    stop_sequences: ["END"],
    stream: true,
  });
});

test("an Anthropic destination answers a whole completion in OpenAI's shape, with the provider's usage", async () => {
  const answer = await f.client.chat.completions.create({
    model: "haiku",
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Say something" },
    ],
    max_tokens: 50,
  });
  assert.equal(answer.object, "chat.completion");
  assert.ok((answer.choices[0]?.message.content ?? "").length > 0);
  assert.equal(answer.choices[0]?.finish_reason, "stop");
  assert.equal(answer.usage?.completion_tokens, 12);
  const generation = (await anthropicGenerations()).at(-1);
  assert.equal(generation?.wire, "anthropic");
  assert.equal(generation?.model, "claude-haiku-4");
  assert.equal(answer.usage?.prompt_tokens, generation?.promptTokens);
});

test("an Anthropic destination streams: its events come back as OpenAI chunks, the finish reason and usage included", async () => {
  const stream = await f.client.chat.completions.create({
    model: "haiku",
    messages: [{ role: "user", content: "Say something" }],
    max_tokens: 5,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let finish: string | null | undefined;
  let usage: { completion_tokens: number } | undefined;
  let contentChunks = 0;
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta.content;
    if (delta) {
      text += delta;
      contentChunks += 1;
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.ok(text.length > 0);
  assert.equal(contentChunks, 5, "one chunk per token, as the provider sent them");
  assert.equal(finish, "length", "Anthropic's max_tokens is OpenAI's length");
  assert.equal(usage?.completion_tokens, 5);
  const generation = (await anthropicGenerations()).at(-1);
  assert.equal(generation?.wire, "anthropic");
  assert.equal(generation?.end, "done");
});

test("a stream the Anthropic provider cuts is an error for the client, not a success", async () => {
  const stream = await f.client.chat.completions.create({
    model: "cut",
    messages: [{ role: "user", content: "Say something" }],
    stream: true,
  });
  await assert.rejects(
    (async () => {
      for await (const _ of stream);
    })(),
    (error: unknown) => error instanceof APIError && /ended before its end/.test(error.message),
  );
});

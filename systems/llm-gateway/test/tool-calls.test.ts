/**
 * Tool calls answered by the provider simulator and passed through the gateway untouched,
 * with the official `openai` SDK as the client: a whole answer's `tool_calls`, and a
 * stream's argument fragments that the SDK joins into the call (valid JSON once whole),
 * `finish_reason: "tool_calls"` both ways; `tool_choice: "none"` answers in text; a request
 * with tools is never served from the semantic cache (LG-12).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

let f: GatewayFixture;

before(async () => {
  f = await startGateway({ profile: { answerTokens: 8 } });
});
after(() => f?.close());

const tools = [
  {
    type: "function" as const,
    function: {
      name: "lookup_order",
      parameters: { type: "object", properties: { answer: { type: "string" } } },
    },
  },
];
const messages = [{ role: "user" as const, content: "Where is my order?" }];

test("a tool call in a whole answer reaches the client as the provider made it", async () => {
  const answer = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    tools,
    temperature: 0,
  });
  const choice = answer.choices[0];
  assert.equal(choice?.finish_reason, "tool_calls");
  const call = choice?.message.tool_calls?.[0];
  assert.equal(call?.type, "function");
  assert.ok(call?.type === "function");
  assert.equal(call.function.name, "lookup_order");
  assert.ok((JSON.parse(call.function.arguments) as { answer: string }).answer.length > 0);
  assert.equal(answer.usage?.completion_tokens, 8);
});

test("a streamed tool call's argument fragments pass through one by one and join into the call", async () => {
  const stream = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    tools,
    temperature: 0,
    stream: true,
  });
  let name = "";
  let args = "";
  let fragments = 0;
  let finish: string | null | undefined;
  for await (const chunk of stream) {
    const call = chunk.choices[0]?.delta.tool_calls?.[0];
    if (call?.function?.name) name = call.function.name;
    if (call?.function?.arguments) {
      args += call.function.arguments;
      fragments += 1;
    }
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  assert.equal(name, "lookup_order");
  assert.equal(fragments, 8 + 2, "the opening, one per token, the closing");
  assert.ok((JSON.parse(args) as { answer: string }).answer.length > 0);
  assert.equal(finish, "tool_calls");
});

test("tool_choice none answers in text; a request with tools is not served from the cache", async () => {
  const first = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    tools,
    tool_choice: "none",
    temperature: 0,
  });
  assert.equal(first.choices[0]?.finish_reason, "stop");
  assert.ok((first.choices[0]?.message.content ?? "").length > 0);
  const again = await f.client.chat.completions
    .create({ model: "gpt-4o-mini", messages, tools, temperature: 0 })
    .withResponse();
  assert.match(again.response.headers.get("x-llm-gateway-cache") ?? "", /^skip/);
  assert.equal(again.data.choices[0]?.finish_reason, "tool_calls");
});

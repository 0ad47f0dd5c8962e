/**
 * The OpenAI-compatible API through the official `openai` SDK, unmodified: whole
 * completions, the model list, logical model names (LG-19), tenants by API key, and every
 * refusal in OpenAI's error shape — unknown model, max_tokens over the limit, malformed
 * messages, a 5 MB prompt, no or a wrong key, the provider's 429 and 5xx — with nothing sent
 * upstream for what the gateway refuses itself.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

let f: GatewayFixture;
before(async () => {
  f = await startGateway({ models: "gpt-4o-mini,fast=gpt-4o-mini,limited,failing" });
  await f.setModel("limited", { rateLimitRate: 1 });
  await f.setModel("failing", { errorRate: 1 });
});
after(() => f?.close());

const messages = [{ role: "user" as const, content: "Say something short." }];

async function upstreamRequests(): Promise<number> {
  const stats = (await (await fetch(`${f.simUrl}/admin/stats`)).json()) as { requests: number };
  return stats.requests;
}

test("a whole completion comes back as the provider sent it, usage included", async () => {
  const completion = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    max_tokens: 7,
  });
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.choices[0]?.finish_reason, "length");
  assert.equal(completion.usage?.completion_tokens, 7);
});

test("LG-19 clients call a logical name; the gateway asks the provider for the model behind it", async () => {
  const completion = await f.client.chat.completions.create({ model: "fast", messages });
  assert.equal(completion.model, "gpt-4o-mini");
  assert.equal((await f.generations()).at(-1)?.model, "gpt-4o-mini");
});

test("GET /v1/models lists the logical names the gateway serves", async () => {
  const ids: string[] = [];
  for await (const model of f.client.models.list()) ids.push(model.id);
  assert.deepEqual(ids, ["gpt-4o-mini", "fast", "limited", "failing"]);
});

test("an unknown model is the SDK's NotFoundError (model_not_found), nothing sent upstream", async () => {
  const before = await upstreamRequests();
  await assert.rejects(
    f.client.chat.completions.create({ model: "gpt-9", messages }),
    (error: unknown) =>
      error instanceof OpenAI.NotFoundError && error.code === "model_not_found" && error.param === "model",
  );
  assert.equal(await upstreamRequests(), before);
});

test("max_tokens above the limit is a BadRequestError naming max_tokens, nothing sent upstream", async () => {
  const before = await upstreamRequests();
  await assert.rejects(
    f.client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 1_000_000 }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "max_tokens",
  );
  assert.equal(await upstreamRequests(), before);
});

test("malformed messages are 400 in OpenAI's shape naming the field", async () => {
  for (const [body, param] of [
    [{ model: "gpt-4o-mini", messages: [{ content: "no role" }] }, "messages[0].role"],
    [{ model: "gpt-4o-mini", messages: [{ role: "robot", content: "x" }] }, "messages[0].role"],
    [{ model: "gpt-4o-mini", messages: [] }, "messages"],
    [{ model: "gpt-4o-mini", messages, max_tokens: "10" }, "max_tokens"],
    [{ model: "gpt-4o-mini", messages, n: 2 }, "n"],
  ] as const) {
    const res = await fetch(`${f.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${f.apiKey}` },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 400, JSON.stringify(body));
    const error = ((await res.json()) as { error: { type: string; param: string; message: string } }).error;
    assert.equal(error.type, "invalid_request_error");
    assert.equal(error.param, param, JSON.stringify(body));
  }
});

test("a 5 MB prompt is 413 in OpenAI's shape", async () => {
  await assert.rejects(
    f.client.chat.completions.create({
      model: "gpt-4o-mini",
      messages: [{ role: "user", content: "x".repeat(5_000_000) }],
    }),
    (error: unknown) =>
      error instanceof OpenAI.APIError && error.status === 413 && error.code === "request_too_large",
  );
});

test("no API key or a wrong one is the SDK's AuthenticationError", async () => {
  const stranger = new OpenAI({
    baseURL: `${f.gateway.url}/v1`,
    apiKey: "llm_0000000000000000_wrong",
    maxRetries: 0,
  });
  await assert.rejects(
    stranger.chat.completions.create({ model: "gpt-4o-mini", messages }),
    (error: unknown) => error instanceof OpenAI.AuthenticationError,
  );
  const res = await fetch(`${f.gateway.url}/v1/models`);
  assert.equal(res.status, 401);
  assert.match(res.headers.get("www-authenticate") ?? "", /^Bearer realm="llm-gateway"/);
  assert.equal(((await res.json()) as { error: { type: string } }).error.type, "authentication_error");
});

test("the provider's 429 reaches the client as a RateLimitError with its Retry-After", async () => {
  await assert.rejects(
    f.client.chat.completions.create({ model: "limited", messages }),
    (error: unknown) => error instanceof OpenAI.RateLimitError && error.headers.get("retry-after") === "1",
  );
});

test("the provider's 5xx is a 502 that names no provider detail", async () => {
  for (const stream of [false, true]) {
    await assert.rejects(
      f.client.chat.completions.create({ model: "failing", messages, stream }),
      (error: unknown) =>
        error instanceof OpenAI.InternalServerError &&
        error.status === 502 &&
        error.code === "llm_upstream_failed",
    );
  }
});

test("LG-16 per-model metrics: TTFT histogram, tokens (rate() of it is TPM), 429 and 5xx counts", async () => {
  const stream = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    stream: true,
    max_tokens: 4,
  });
  for await (const _ of stream) {
  }
  await assert.rejects(f.client.chat.completions.create({ model: "limited", messages }));
  await assert.rejects(f.client.chat.completions.create({ model: "failing", messages }));
  const text = await (await fetch(`${f.gateway.url}/metrics`)).text();
  const value = (prefix: string) =>
    Number(
      text
        .split("\n")
        .find((l) => l.startsWith(prefix))
        ?.split(" ")
        .at(-1) ?? 0,
    );
  assert.ok(value('llm_gateway_ttft_seconds_count{model="gpt-4o-mini"}') >= 1, "TTFT observed");
  assert.ok(
    value('llm_gateway_tokens_total{model="gpt-4o-mini",kind="completion"}') >= 4,
    "completion tokens",
  );
  assert.ok(value('llm_gateway_tokens_total{model="gpt-4o-mini",kind="prompt"}') >= 1, "prompt tokens");
  assert.ok(value('llm_gateway_requests_total{model="limited",outcome="rate_limited"}') >= 1, "429s");
  assert.ok(value('llm_gateway_requests_total{model="failing",outcome="upstream_error"}') >= 1, "5xx");
});

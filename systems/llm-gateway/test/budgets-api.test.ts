/**
 * Budgets through the API with the `openai` SDK (LG-05, LG-06), on the embedded counter:
 * requests and tokens both limit, the reservation is input + the maximum output, a refusal
 * is a RateLimitError with the computed Retry-After, the provider's usage settles it (the
 * unused part comes back), and a request larger than a whole budget is a 400, not a wait.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

const ADMIN = "admin-token-for-the-budget-tests-0123456789";
const WINDOW_MS = 3_600_000;
let f: GatewayFixture;

before(async () => {
  // An hour's window, aligned to the clock like a minute's: a test that crossed a minute's end saw
  // its filled budget start afresh, and the refusal it waits for never came (~1 test-second in 60).
  f = await startGateway({
    models: "gpt-4o-mini,slow",
    env: { LLM_GATEWAY_ADMIN_TOKEN: ADMIN, LLM_GATEWAY_BUDGET_WINDOW_MS: String(WINDOW_MS) },
  });
  // 10 tokens at 4/s: a stream holds its reservation for ~2.5 s, the time a test has to make its
  // next request meet it. At 20/s (0.5 s) two test files at once on a loaded machine sometimes
  // let the streams end, and their reservations settle, before the request they should refuse.
  await f.setModel("slow", { ttftMs: 0, tokensPerS: 4, answerTokens: 10 });
});
after(() => f?.close());

async function tenant(id: string, rpm: number, tpm: number): Promise<OpenAI> {
  const res = await fetch(`${f.gateway.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
    body: JSON.stringify({ id, name: id, rpm, tpm }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const { apiKey } = (await res.json()) as { apiKey: { key: string } };
  return new OpenAI({ baseURL: `${f.gateway.url}/v1`, apiKey: apiKey.key, maxRetries: 0, timeout: 60_000 });
}

const messages = [{ role: "user" as const, content: "hi" }];

test("LG-05 requests per window limit a tenant whose tokens still have room", async () => {
  const client = await tenant("rpm-bound", 3, 1_000_000);
  for (let i = 0; i < 3; i++)
    await client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 5 });
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 5 }),
    (error: unknown) => error instanceof OpenAI.RateLimitError && /requests per window/.test(error.message),
  );
});

test("LG-05 tokens per window limit a tenant whose requests still have room: a 9,000-token ask weighs 9,000", async () => {
  const client = await tenant("tpm-bound", 1_000, 20_000);
  // Two streams each hold ~9,008 tokens (8 in + 9,000 max out) while they run: 3 requests of 1,000 allowed.
  const open = [];
  for (let i = 0; i < 2; i++) {
    const stream = await client.chat.completions.create({
      model: "slow",
      messages,
      max_tokens: 9_000,
      stream: true,
    });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    open.push(iterator);
  }
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 9_000 }),
    (error: unknown) => error instanceof OpenAI.RateLimitError && /tokens per window/.test(error.message),
  );
  for (const iterator of open)
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {}
});

test("LG-06 a reservation holds input + max output until the answer settles it; then the unused part is back", async () => {
  const client = await tenant("reserve", 1_000, 1_000);
  // Holds ~908 (8 in + 900 max out) while it streams 10 tokens at 4/s.
  const first = await client.chat.completions.create({
    model: "slow",
    messages,
    max_tokens: 900,
    stream: true,
  });
  const iterator = first[Symbol.asyncIterator]();
  await iterator.next();
  // Retry-After is the window's end: no later than the seconds left in it when the request went.
  const leftS = Math.ceil((WINDOW_MS - (Date.now() % WINDOW_MS)) / 1_000);
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 900 }),
    (error: unknown) => {
      if (!(error instanceof OpenAI.RateLimitError)) return false;
      const retryAfterS = Number(error.headers.get("retry-after"));
      return retryAfterS >= 1 && retryAfterS <= leftS;
    },
  );
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) {}
  // Settled at the provider's ~17 tokens: 900 fits again.
  const again = await client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 900 });
  assert.equal(again.object, "chat.completion");
});

test("LG-06 a request above the whole budget is a 400 naming max_tokens: waiting would never help", async () => {
  const client = await tenant("too-big", 1_000, 1_000);
  await assert.rejects(
    client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 5_000 }),
    (error: unknown) => error instanceof OpenAI.BadRequestError && error.param === "max_tokens",
  );
});

test("a provider failure gives every reserved token back", async () => {
  const client = await tenant("refund-on-failure", 1_000, 1_000);
  await f.setModel("gpt-4o-mini", { errorRate: 1 });
  try {
    for (let i = 0; i < 3; i++) {
      await assert.rejects(
        client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 900 }),
        (error: unknown) => error instanceof OpenAI.InternalServerError,
      );
    }
  } finally {
    await f.setModel("gpt-4o-mini", { errorRate: 0 });
  }
  const ok = await client.chat.completions.create({ model: "gpt-4o-mini", messages, max_tokens: 900 });
  assert.equal(ok.object, "chat.completion");
});

test("LLM_GATEWAY_BUDGETS=false is plain proxying: nothing is reserved, a tenant's 1 request per window does not limit", async () => {
  const plain = await startGateway({ env: { LLM_GATEWAY_BUDGETS: "false", LLM_GATEWAY_TENANT_RPM: "1" } });
  try {
    for (let i = 0; i < 3; i++) {
      const answer = await plain.client.chat.completions.create({
        model: "gpt-4o-mini",
        messages,
        max_tokens: 5,
      });
      assert.equal(answer.choices[0]?.finish_reason, "length");
    }
  } finally {
    await plain.close();
  }
});

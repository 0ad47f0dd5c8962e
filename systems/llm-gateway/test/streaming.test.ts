/**
 * Streaming through the gateway (LG-01 … LG-04), with the official `openai` SDK as the client
 * where one is involved and the provider simulator's records as the witness of what happened
 * upstream: events relayed as they are generated, keep-alive comments through a long pause,
 * the upstream request closed when the client leaves, and a provider stream cut before its
 * end delivered as an error, never as a success.
 */
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { after, before, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import OpenAI from "openai";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

let f: GatewayFixture;
before(async () => {
  f = await startGateway({
    models: "gpt-4o-mini,paced,paused,endless,cutting",
    env: { LLM_GATEWAY_KEEP_ALIVE_MS: "200" },
  });
  await f.setModel("paced", { ttftMs: 0, tokensPerS: 10, answerTokens: 15 });
  await f.setModel("paused", {
    ttftMs: 0,
    tokensPerS: 1_000,
    answerTokens: 6,
    pauseAfterTokens: 3,
    pauseMs: 1_500,
  });
  await f.setModel("endless", { ttftMs: 0, tokensPerS: 20, answerTokens: 100_000 });
  await f.setModel("cutting", { ttftMs: 0, tokensPerS: 1_000, answerTokens: 40, cutAfterTokens: 4 });
});
after(() => f?.close());

const messages = [{ role: "user" as const, content: "Tell me a story." }];

/** The raw SSE text of a stream, read to its end through node:http with an idle timeout like a load balancer's. */
function rawStream(
  body: object,
  idleTimeoutMs: number,
): Promise<{ status: number; type: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${f.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${f.apiKey}` },
    });
    req.setTimeout(idleTimeoutMs, () => req.destroy(new Error(`idle for ${idleTimeoutMs} ms: cut`)));
    req.on("error", reject);
    req.on("response", (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("error", reject);
      res.on("end", () =>
        resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"]), text }),
      );
    });
    req.end(JSON.stringify(body));
  });
}

async function metric(line: RegExp): Promise<number> {
  const text = await (await fetch(`${f.gateway.url}/metrics`)).text();
  const found = text.split("\n").find((l) => line.test(l));
  return found === undefined ? 0 : Number(found.split(" ").at(-1));
}

test("LG-01 a stream is text/event-stream: data: lines, a blank line after each event, [DONE] last", async () => {
  const { status, type, text } = await rawStream(
    { model: "gpt-4o-mini", messages, stream: true, max_tokens: 5 },
    30_000,
  );
  assert.equal(status, 200);
  assert.match(type, /^text\/event-stream/);
  const events = text.split("\n\n").filter((e) => e !== "" && !e.startsWith(":"));
  assert.ok(
    events.every((e) => e.startsWith("data: ")),
    text,
  );
  assert.equal(events.at(-1), "data: [DONE]");
  // The provider was asked for its usage; this client did not ask, so the usage chunk is not relayed.
  assert.ok(!text.includes('"choices":[]'), text);
});

test("LG-01 with stream_options.include_usage the client gets the provider's usage chunk", async () => {
  const stream = await f.client.chat.completions.create({
    model: "gpt-4o-mini",
    messages,
    stream: true,
    max_tokens: 6,
    stream_options: { include_usage: true },
  });
  let usage: OpenAI.CompletionUsage | null | undefined;
  let deltas = 0;
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) deltas += 1;
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(deltas, 6);
  assert.equal(usage?.completion_tokens, 6);
});

test("LG-02 each event reaches the client while the provider is still generating: nothing is held back", async () => {
  // 10 tokens/s: a buffering proxy would hand over all 15 at the end, 1.5 s after the first.
  const stream = await f.client.chat.completions.create({ model: "paced", messages, stream: true });
  const lags: number[] = [];
  let received = 0;
  for await (const chunk of stream) {
    if (!chunk.choices[0]?.delta.content) continue;
    received += 1;
    const generated = (await f.generations()).at(-1)?.generatedTokens ?? 0;
    lags.push(generated - received);
  }
  assert.equal(received, 15);
  // When the client holds token k, the provider has made at most a few more — the poll's own delay,
  // which a stall of the loaded host stretches for one poll or two (7 tokens once, at load 24) —
  // and never the rest of the answer: a buffering proxy gives lags 14, 13, …, 0 (median 7).
  const sorted = [...lags].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  assert.ok(median <= 3, `median tokens generated but not yet received: ${median} (${lags.join(",")})`);
  // Never all the rest at once (a buffering proxy's first lag is 14): the bound a stall of the
  // host can reach is time, not tokens (the simulator catches up on the tokens it owes after one).
  assert.ok(Math.max(...lags) < 14, `tokens generated but not yet received: ${lags.join(",")}`);
});

test("LG-03 a 1.5 s pause between tokens passes a 1 s idle timeout: keep-alive comments fill it", async () => {
  const { text } = await rawStream({ model: "paused", messages, stream: true }, 1_000);
  assert.match(text, /: keep-alive\n\n/);
  assert.ok(text.endsWith("data: [DONE]\n\n"), text);
  assert.ok((await metric(/^llm_gateway_keep_alives_total\{model="paused"\}/)) >= 1);
});

test("LG-03 control: without keep-alive comments the same pause is cut by the 1 s idle timeout", async () => {
  const quiet = await startGateway({ models: "paused", env: { LLM_GATEWAY_KEEP_ALIVE_MS: "60000" } });
  try {
    await quiet.setModel("paused", {
      ttftMs: 0,
      tokensPerS: 1_000,
      answerTokens: 6,
      pauseAfterTokens: 3,
      pauseMs: 1_500,
    });
    const req = httpRequest(`${quiet.gateway.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${quiet.apiKey}` },
    });
    const cut = new Promise<string>((resolve) => {
      req.setTimeout(1_000, () => {
        req.destroy();
        resolve("cut");
      });
      req.on("error", () => {});
      req.on("response", (res) => {
        res.on("data", () => {});
        res.on("error", () => {});
        res.on("end", () => resolve("completed"));
      });
    });
    req.end(JSON.stringify({ model: "paused", messages, stream: true }));
    assert.equal(await cut, "cut");
  } finally {
    await quiet.close();
  }
});

test("LG-04 a client leaving mid-stream closes the provider's request: it stops generating", async () => {
  const stream = await f.client.chat.completions.create({ model: "endless", messages, stream: true });
  let received = 0;
  // Leaving the loop is how an SDK user closes a stream: the SDK aborts its request.
  for await (const chunk of stream) {
    if (chunk.choices[0]?.delta.content) received += 1;
    if (received === 3) break;
  }
  const leftAt = Date.now();
  const record = await eventually(async () => (await f.generations()).at(-1), {
    what: "the provider to see its connection closed",
    timeoutMs: 30_000,
    accept: (last) => last?.end === "client-closed",
  });
  // Generated after the client left: those in flight at 20 tokens/s while the close travelled
  // (a second's worth, and what a stall of the loaded host adds: the simulator catches up on what
  // it owes), not the 100,000 the answer would have run to (an hour and a half of paid tokens).
  const afterClose = (record?.generatedTokens ?? 0) - received;
  const bound = Math.ceil(((Date.now() - leftAt) / 1_000 + 1) * 20);
  assert.ok(afterClose <= bound, `generated after the close: ${afterClose} (bound ${bound})`);
  assert.equal(await metric(/^llm_gateway_open_streams\{model="endless"\}/), 0);
  assert.equal(await metric(/^llm_gateway_requests_total\{model="endless",outcome="cancelled"\}/), 1);
});

test("LG-04 a client leaving a non-streamed request closes the provider's request too: it stops generating", async () => {
  const before = (await f.generations()).length;
  const leave = new AbortController();
  const asked = f.client.chat.completions.create(
    { model: "endless", messages, stream: false },
    { signal: leave.signal, maxRetries: 0 },
  );
  // The whole answer would take 5,000 s at 20 tokens/s: the client gives up after ~1 s.
  await eventually(async () => (await f.generations()).length, {
    what: "the provider to start generating",
    timeoutMs: 10_000,
    accept: (n) => n > before,
  }).catch(() => undefined);
  const startedAt = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  leave.abort();
  await assert.rejects(asked);
  const record = await eventually(async () => (await f.generations()).at(-1), {
    what: "the provider to see its connection closed",
    timeoutMs: 30_000,
    accept: (last) => last?.end === "client-closed",
  });
  // At 20 tokens/s: what the second before the abort generated, and those in flight while the
  // close travelled — not the 100,000 the answer would have run to.
  const bound = Math.ceil(((Date.now() - startedAt) / 1_000 + 2) * 20);
  assert.ok((record?.generatedTokens ?? 0) <= bound, `generated ${record?.generatedTokens} (bound ${bound})`);
});

test("a provider stream cut before its end is an error event for the client, never a success", async () => {
  const stream = await f.client.chat.completions.create({ model: "cutting", messages, stream: true });
  let deltas = 0;
  await assert.rejects(
    async () => {
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) deltas += 1;
    },
    (error: unknown) => error instanceof OpenAI.APIError && error.code === "llm_stream_truncated",
  );
  assert.equal(deltas, 4);
  assert.equal(await metric(/^llm_gateway_requests_total\{model="cutting",outcome="truncated"\}/), 1);
  assert.equal(await metric(/^llm_gateway_tokens_total\{model="cutting",kind="completion"\}/), 4);
});

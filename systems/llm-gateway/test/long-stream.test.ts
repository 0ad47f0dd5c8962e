/**
 * LG-01's "seconds to minutes" and LG-03's load balancer at their real lengths. The other
 * streaming tests shrink every interval to milliseconds and set the keep-alive to 200 ms; this
 * one keeps the gateway's defaults (keep-alive comments after 15 s of silence, the upstream's
 * 120 s idle bound, the 10 min generation bound) and runs one generation of more than a minute
 * with a 45 s silence in the middle, through an nginx whose idle timeout (`proxy_read_timeout`
 * 30 s) is shorter than that silence — what a deployment behind a load balancer meets.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import OpenAI from "openai";
import { startGateway } from "./gateway-fixture.ts";

const PROFILE = { ttftMs: 0, tokensPerS: 2, answerTokens: 40, pauseAfterTokens: 20, pauseMs: 45_000 };
/** 40 tokens at 2/s around the pause: ~64 s of generation, the least the stream can take. */
const MINUTE_MS = 60_000;
const LB_IDLE_TIMEOUT_S = 30;

test("LG-01 a generation of more than a minute with a 45 s silence streams to its end through an nginx with a 30 s idle timeout, on the gateway's default timeouts", async (t) => {
  const f = await startGateway({ models: "slow" });
  t.after(() => f.close());
  await f.setModel("slow", PROFILE);
  const nginx = await spawnOrSkip(t, () =>
    spawnNginx({
      http: (port) => `
        server {
          listen 127.0.0.1:${port};
          location / {
            proxy_pass ${f.gateway.url};
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout ${LB_IDLE_TIMEOUT_S}s;
          }
        }`,
      readyPath: "/healthz",
    }),
  );
  if (!nginx) return;
  t.after(() => nginx.stop());

  const client = new OpenAI({
    baseURL: `${nginx.url}/v1`,
    apiKey: f.apiKey,
    maxRetries: 0,
    timeout: 180_000,
  });
  const started = performance.now();
  const stream = await client.chat.completions.create({
    model: "slow",
    messages: [{ role: "user", content: "Tell me a long story." }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = "";
  let finish: string | null | undefined;
  let completionTokens: number | undefined;
  let longestGapMs = 0;
  let last = performance.now();
  for await (const chunk of stream) {
    const now = performance.now();
    longestGapMs = Math.max(longestGapMs, now - last);
    last = now;
    text += chunk.choices[0]?.delta?.content ?? "";
    finish = chunk.choices[0]?.finish_reason ?? finish;
    completionTokens = chunk.usage?.completion_tokens ?? completionTokens;
  }
  const elapsedMs = performance.now() - started;

  assert.equal(finish, "stop");
  assert.equal(completionTokens, PROFILE.answerTokens);
  assert.ok(text.length > 0);
  assert.ok(elapsedMs >= MINUTE_MS, `the stream took ${elapsedMs} ms`);
  // The silence was really there, longer than the balancer's idle timeout: only the gateway's
  // keep-alive comments (which the SDK does not surface) kept the connection open through it.
  assert.ok(longestGapMs > LB_IDLE_TIMEOUT_S * 1_000, `longest gap between chunks ${longestGapMs} ms`);
  const metrics = await (await fetch(`${f.gateway.url}/metrics`)).text();
  const keepAlives = metrics
    .split("\n")
    .find((l) => l.startsWith('llm_gateway_keep_alives_total{model="slow"}'));
  assert.ok(Number(keepAlives?.split(" ").at(-1)) >= 2, keepAlives);
  const [generation] = (await f.generations()).filter((g) => g.model === "slow");
  assert.equal(generation?.end, "done");
  assert.equal(generation?.generatedTokens, PROFILE.answerTokens);
});

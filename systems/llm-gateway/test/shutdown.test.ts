/**
 * LG-15: a gateway holding open streams is stopped with SIGTERM, as an orchestrator does: it
 * takes no new request, every one of the 100 streams in flight runs to its `[DONE]` (within
 * the drain bound), and the process exits 0; and a stream still open when the drain bound is
 * about to end gets an error event, never a silent cut, and its provider request is closed.
 * The gateway runs as its own process, on PGlite.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { spawnChild } from "@casebook/lab/spawn-child";
import { defaultModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim } from "../src/sim/provider-sim.ts";

const STREAMS = 100;

async function startGatewayProcess(
  t: { after(fn: () => unknown): void },
  simUrl: string,
  drainTimeoutMs: number,
): Promise<{ url: string; key: string; gateway: Awaited<ReturnType<typeof spawnChild>> }> {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-llm-gateway-shutdown-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const gateway = await spawnChild(new URL("./gateway-child.ts", import.meta.url), {
    env: {
      ...process.env,
      PORT: "0",
      LOG_LEVEL: "warn",
      CASEBOOK_DATA: dataDir,
      LLM_GATEWAY_UPSTREAM_URL: `${simUrl}/v1`,
      LLM_GATEWAY_MODELS: "gpt-4o-mini",
      LLM_GATEWAY_TENANT_RPM: "10000",
      LLM_GATEWAY_TENANT_TPM: "10000000",
      LLM_GATEWAY_DRAIN_TIMEOUT_MS: String(drainTimeoutMs),
    },
    ready: /^ready /,
    readyTimeoutMs: 240_000,
    test: t,
  });
  // PGlite reads fd 0: an open, silent pipe would hold it.
  gateway.process.stdin.end();
  const [, url, key] = gateway.readyLine.split(" ");
  return { url: url as string, key: key as string, gateway };
}

test("LG-15 SIGTERM with 100 open streams: each runs to [DONE], no new request is taken, exit 0", async (t) => {
  // 30 tokens at 10/s: every stream is still running, three seconds from its end, when SIGTERM lands.
  const sim = createProviderSim({
    rng: seededRandom(3),
    log: { level: "silent" },
    behaviour: {
      models: { "gpt-4o-mini": { ...defaultModelProfile, ttftMs: 0, tokensPerS: 10, answerTokens: 30 } },
    },
  });
  const { url: simUrl } = await sim.listen({ port: 0 });
  t.after(() => sim.close());
  const { url, key, gateway } = await startGatewayProcess(t, simUrl, 60_000);
  const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
  const body = JSON.stringify({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    max_tokens: 30,
  });
  const firstChunks: Promise<void>[] = [];
  const streams = Array.from({ length: STREAMS }, async () => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body });
    assert.equal(res.status, 200);
    const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
    assert.ok(reader);
    let text = "";
    let signalFirst: () => void = () => {};
    firstChunks.push(new Promise<void>((resolve) => (signalFirst = resolve)));
    for (let part = await reader.read(); !part.done; part = await reader.read()) {
      text += part.value;
      if (text.includes('"content":" ')) signalFirst();
    }
    return text;
  });
  // Every stream has its first token before the signal.
  while (firstChunks.length < STREAMS) await new Promise((resolve) => setTimeout(resolve, 50));
  await Promise.all(firstChunks);
  gateway.process.kill("SIGTERM");
  // The gateway handles the signal on its next loop turn, which on a loaded host may come later than
  // any fixed wait (200 ms once was not enough): ask until refused — a stream taken before that is
  // cancelled at once — then once more, since a closing gateway never takes a request again.
  const ask = async () => {
    const cancel = new AbortController();
    return fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body, signal: cancel.signal }).then(
      (res) => {
        cancel.abort();
        return res.status;
      },
      () => "connection refused",
    );
  };
  const deadline = performance.now() + 10_000;
  let refused = await ask();
  while (refused === 200 && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    refused = await ask();
  }
  for (const answer of [refused, await ask()]) {
    assert.ok(answer === 503 || answer === "connection refused", `a new request after SIGTERM got ${answer}`);
  }
  const texts = await Promise.all(streams);
  for (const text of texts) assert.ok(text.endsWith("data: [DONE]\n\n"), text.slice(-200));
  assert.deepEqual(await gateway.exited, { code: 0, signal: null });
});

test("LG-15 a stream still open when the drain bound ends gets an error event (no [DONE]), its provider request closed, exit 0", async (t) => {
  const OPEN = 10;
  // 200 tokens at 5/s: 40 s a stream, far past a 3 s drain bound.
  const sim = createProviderSim({
    rng: seededRandom(4),
    log: { level: "silent" },
    behaviour: {
      models: { "gpt-4o-mini": { ...defaultModelProfile, ttftMs: 0, tokensPerS: 5, answerTokens: 200 } },
    },
  });
  const { url: simUrl } = await sim.listen({ port: 0 });
  t.after(() => sim.close());
  const { url, key, gateway } = await startGatewayProcess(t, simUrl, 3_000);
  const headers = { "content-type": "application/json", authorization: `Bearer ${key}` };
  const body = JSON.stringify({
    model: "gpt-4o-mini",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    max_tokens: 200,
  });
  const firstChunks: Promise<void>[] = [];
  const streams = Array.from({ length: OPEN }, async () => {
    const res = await fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body });
    assert.equal(res.status, 200);
    const reader = res.body?.pipeThrough(new TextDecoderStream()).getReader();
    assert.ok(reader);
    let text = "";
    let signalFirst: () => void = () => {};
    firstChunks.push(new Promise<void>((resolve) => (signalFirst = resolve)));
    for (let part = await reader.read(); !part.done; part = await reader.read()) {
      text += part.value;
      if (text.includes('"content":" ')) signalFirst();
    }
    return text;
  });
  while (firstChunks.length < OPEN) await new Promise((resolve) => setTimeout(resolve, 50));
  await Promise.all(firstChunks);
  gateway.process.kill("SIGTERM");
  const texts = await Promise.all(streams);
  for (const text of texts) {
    assert.ok(!text.includes("[DONE]"), "a cut stream must not claim its end");
    const last = text.trimEnd().split("\n\n").at(-1) ?? "";
    assert.match(last, /^data: \{"error":\{.*"code":"llm_gateway_shutting_down"/, last);
  }
  assert.deepEqual(await gateway.exited, { code: 0, signal: null });
  // The provider's side was closed too: none of the generations ran to its end.
  const res = await fetch(`${simUrl}/admin/streams?limit=100`);
  const { streams: generations } = (await res.json()) as {
    streams: Array<{ end: string; generatedTokens: number }>;
  };
  assert.equal(generations.length, OPEN);
  for (const generation of generations) {
    assert.equal(generation.end, "client-closed", JSON.stringify(generation));
    assert.ok(generation.generatedTokens < 200, JSON.stringify(generation));
  }
});

/**
 * The semantic cache's two embedders (LG-11/12): the upstream's `/v1/embeddings` when
 * LLM_GATEWAY_EMBEDDINGS_MODEL is set, the local lexical embedder by default; and the
 * provider simulator's deterministic `/v1/embeddings`, read with the official `openai` SDK.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { CACHE_HEADER } from "../src/api/semantic-cache.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

const EMBEDDINGS = "text-embedding-3-small";

function ask(f: GatewayFixture, content: string, temperature = 0) {
  return f.client.chat.completions
    .create({ model: "gpt-4o-mini", messages: [{ role: "user", content }], temperature, max_tokens: 8 })
    .withResponse();
}

async function embeddingsServed(f: GatewayFixture): Promise<number> {
  return ((await (await fetch(`${f.simUrl}/admin/stats`)).json()) as { embeddings: number }).embeddings;
}

describe("with the upstream's /v1/embeddings", () => {
  let f: GatewayFixture;
  before(async () => {
    f = await startGateway({ env: { LLM_GATEWAY_EMBEDDINGS_MODEL: EMBEDDINGS } });
  });
  after(() => f?.close());

  test("the simulator's embeddings are deterministic unit vectors of the length asked (the openai SDK, base64 and float)", async () => {
    const sim = new OpenAI({ baseURL: `${f.simUrl}/v1`, apiKey: "sim", maxRetries: 0 });
    const a = await sim.embeddings.create({ model: EMBEDDINGS, input: "What is 2 + 2?", dimensions: 96 });
    const b = await sim.embeddings.create({
      model: EMBEDDINGS,
      input: ["What is 2 + 2?", "Name a prime above 100"],
      dimensions: 96,
      encoding_format: "float",
    });
    const [va, vb, vc] = [a.data[0]!.embedding, b.data[0]!.embedding, b.data[1]!.embedding];
    assert.equal(va.length, 96);
    assert.ok(
      va.every((v, i) => Math.abs(v - vb[i]!) < 1e-6),
      "the same text, the same vector",
    );
    assert.ok(Math.abs(Math.hypot(...va) - 1) < 1e-5, "unit length");
    assert.ok(
      va.some((v, i) => Math.abs(v - vc[i]!) > 1e-3),
      "another text, another vector",
    );
    const whole = await sim.embeddings.create({
      model: EMBEDDINGS,
      input: "hello",
      encoding_format: "float",
    });
    assert.equal(whole.data[0]!.embedding.length, 1_536, "no `dimensions`: text-embedding-3-small's 1,536");
  });

  test("LG-11 with upstream embeddings: the repeat is a hit, each deterministic request embedded once upstream", async () => {
    const before = await embeddingsServed(f);
    const first = await ask(f, "What is the capital of France?");
    assert.equal(first.response.headers.get(CACHE_HEADER), "miss");
    const again = await ask(f, "What is the capital of France?");
    assert.match(again.response.headers.get(CACHE_HEADER) ?? "", /^hit; similarity=1\.0000$/);
    assert.equal(again.data.choices[0]?.message.content, first.data.choices[0]?.message.content);
    assert.equal(await embeddingsServed(f), before + 2);
  });

  test('LG-11 with upstream embeddings: "2+2" is not served "2+3"\'s answer', async () => {
    await ask(f, "What is 2+2?");
    const other = await ask(f, "What is 2+3?");
    assert.equal(other.response.headers.get(CACHE_HEADER), "miss");
  });

  test("LG-12 with upstream embeddings: a request that is not deterministic is never embedded", async () => {
    const before = await embeddingsServed(f);
    const hot = await ask(f, "Write a poem about the sea", 0.9);
    assert.match(hot.response.headers.get(CACHE_HEADER) ?? "", /^skip; /);
    assert.equal(await embeddingsServed(f), before);
  });
});

describe("with an embeddings endpoint that does not answer", () => {
  let f: GatewayFixture;
  before(async () => {
    f = await startGateway({
      env: {
        LLM_GATEWAY_EMBEDDINGS_MODEL: EMBEDDINGS,
        // A port nothing listens on (a closed TCP port refuses at once).
        LLM_GATEWAY_EMBEDDINGS_URL: "http://127.0.0.1:9/v1",
        LLM_GATEWAY_EMBEDDINGS_TIMEOUT_MS: "500",
      },
    });
  });
  after(() => f?.close());

  test("LG-11 embeddings unavailable: the request is answered uncached, never failed", async () => {
    const res = await ask(f, "What is the capital of Spain?");
    assert.equal(res.response.headers.get(CACHE_HEADER), "skip; unavailable");
    assert.ok((res.data.choices[0]?.message.content ?? "").length > 0);
  });
});

describe("by default (no embeddings model)", () => {
  let f: GatewayFixture;
  before(async () => {
    f = await startGateway();
  });
  after(() => f?.close());

  test("LG-11 the local lexical embedder: a hit with no call to /v1/embeddings", async () => {
    await ask(f, "What is the capital of Italy?");
    const again = await ask(f, "what's the capital of italy");
    assert.match(again.response.headers.get(CACHE_HEADER) ?? "", /^hit; /);
    assert.equal(await embeddingsServed(f), 0);
  });
});

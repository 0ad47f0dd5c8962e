/**
 * The semantic cache store's contract, one suite on PGlite and PostgreSQL (LG-11, LG-14):
 * the nearest live entry at or above the threshold, of one tenant and one scope only.
 */
import assert from "node:assert/strict";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { ManualClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { embedText } from "../src/domain/lexical-embedder.ts";
import { type CachedAnswer, SemanticCacheStore } from "../src/store/semantic-cache-store.ts";

const clock = new ManualClock(Date.parse("2026-01-01T00:00:00Z"));
const backends = sqlBackends({
  system: "llm-gateway",
  prefix: "llm_cache",
  prepare: (db) => runMigrations(db, { dir: new URL("../src/store/migrations/", import.meta.url) }),
  subject: (db) => new SemanticCacheStore(db, { clock }),
});

const scope = "a".repeat(64);
const otherScope = "b".repeat(64);
const answer = (content: string): CachedAnswer => ({
  content,
  finishReason: "stop",
  model: "gpt-4o-mini",
  promptTokens: 5,
  completionTokens: 1,
});

contractSuite("semantic cache store", backends, (it) => {
  it("LG-11 the most similar entry at or above the threshold answers; below it nothing does", async (store) => {
    for (const [prompt, content] of [
      ["What is the capital of France?", "Paris"],
      ["What is 2+2?", "4"],
    ] as const) {
      await store.insert({
        tenantId: "acme",
        scope,
        prompt,
        embedding: embedText(prompt),
        answer: answer(content),
        ttlMs: 60_000,
      });
    }
    const hit = await store.lookup({
      tenantId: "acme",
      scope,
      embedding: embedText("what's the capital of france"),
      threshold: 0.86,
    });
    assert.equal(hit?.answer.content, "Paris");
    assert.ok(hit && Math.abs(hit.similarity - 1) < 1e-5, String(hit?.similarity));
    assert.equal(hit?.prompt, "What is the capital of France?");
    assert.equal(
      await store.lookup({ tenantId: "acme", scope, embedding: embedText("What is 2+3?"), threshold: 0.86 }),
      undefined,
    );
  });

  it("LG-11 always separated by tenant, and by scope (model and parameters)", async (store) => {
    const prompt = "Summarize the plot of Hamlet";
    await store.insert({
      tenantId: "acme",
      scope,
      prompt,
      embedding: embedText(prompt),
      answer: answer("acme's"),
      ttlMs: 60_000,
    });
    const embedding = embedText(prompt);
    assert.equal(await store.lookup({ tenantId: "globex", scope, embedding, threshold: 0.5 }), undefined);
    assert.equal(
      await store.lookup({ tenantId: "acme", scope: otherScope, embedding, threshold: 0.5 }),
      undefined,
    );
    assert.equal(
      (await store.lookup({ tenantId: "acme", scope, embedding, threshold: 0.99 }))?.answer.content,
      "acme's",
    );
  });

  it("an expired entry is never served, and the sweep deletes it", async (store) => {
    const prompt = "Is 17 a prime number?";
    await store.insert({
      tenantId: "acme",
      scope: otherScope,
      prompt,
      embedding: embedText(prompt),
      answer: answer("yes"),
      ttlMs: 1_000,
    });
    const lookup = () =>
      store.lookup({ tenantId: "acme", scope: otherScope, embedding: embedText(prompt), threshold: 0.9 });
    assert.equal((await lookup())?.answer.content, "yes");
    clock.advance(1_000);
    assert.equal(await lookup(), undefined);
    assert.ok((await store.sweep()) >= 1);
  });

  it("the cache writer's batch is one INSERT of many entries, each found by its own tenant and scope", async (store) => {
    const prompts = ["Translate 'good morning' to German", "Name the largest planet", "Spell 'necessary'"];
    await store.insertMany(
      prompts.map((prompt, i) => ({
        tenantId: `batch-${i}`,
        scope,
        prompt,
        embedding: embedText(prompt),
        answer: answer(`answer ${i}`),
        ttlMs: 60_000,
      })),
    );
    for (const [i, prompt] of prompts.entries()) {
      const hit = await store.lookup({
        tenantId: `batch-${i}`,
        scope,
        embedding: embedText(prompt),
        threshold: 0.99,
      });
      assert.equal(hit?.answer.content, `answer ${i}`);
      assert.equal(hit?.prompt, prompt);
    }
  });
});

/**
 * LG-07 raced: three gateway processes on one real Redis (the counter) and one PostgreSQL (the
 * key and quota table), one tenant, 60 requests fired at once across them. Because each
 * reservation is one atomic script on the shared counter, the tokens the provider reports for
 * the admitted requests never exceed the tenant's budget — however the requests interleave.
 * Skips when PostgreSQL or Redis is not running.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { uniqueName } from "@casebook/lab/test-engines";
import { startReplicas } from "./replica-fixture.ts";

const TPM = 2_000;
const REQUESTS = 60;
const MAX_TOKENS = 100;

test("LG-07 three gateway processes on one Redis never admit more than a tenant's tokens per window", async (t) => {
  const world = await startReplicas(t, {
    prefix: "llm_race",
    count: 3,
    seed: 7,
    profile: { ttftMs: 20, tokensPerS: 5_000, answerTokens: 1_000 },
  });
  if (world === undefined) return;
  const tenantId = uniqueName("race").replaceAll(/[^A-Za-z0-9_-]/g, "_");
  const created = await world.tenants.createIfAbsent({
    id: tenantId,
    name: "race",
    rpm: 1_000_000,
    tpm: TPM,
  });
  assert.ok(created);
  const { urls, replicas: gateways } = world;
  const results = await Promise.all(
    Array.from({ length: REQUESTS }, async (_, i) => {
      const res = await fetch(`${urls[i % urls.length]}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${created.apiKey.key}` },
        body: JSON.stringify({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: "hi" }],
          max_tokens: MAX_TOKENS,
        }),
      });
      const body = (await res.json()) as { usage?: { total_tokens: number } };
      return { status: res.status, tokens: body.usage?.total_tokens ?? 0 };
    }),
  );
  const admitted = results.filter((r) => r.status === 200);
  assert.deepEqual(
    [...new Set(results.map((r) => r.status))].sort(),
    admitted.length === REQUESTS ? [200] : [200, 429],
  );
  const providerTokens = admitted.reduce((sum, r) => sum + r.tokens, 0);
  assert.ok(
    providerTokens <= TPM,
    `the provider generated ${providerTokens} tokens for a ${TPM}-token budget`,
  );
  // The budget was the limit, not something else: 60 × ~107 tokens asked, under 2,000 admitted.
  assert.ok(admitted.length < REQUESTS, "nothing was refused");
  assert.ok(admitted.length >= Math.floor(TPM / (MAX_TOKENS + 20)), `only ${admitted.length} admitted`);
  await Promise.all(gateways.map((g) => g.stop()));
});

/**
 * LG-07 raced: three gateway processes on one real Redis (the counter) and one PostgreSQL (the
 * key and quota table), one tenant, 60 requests fired at once across them. Because each
 * reservation is one atomic script on the shared counter, the tokens the provider reports for
 * the admitted requests never exceed the tenant's budget — however the requests interleave.
 * Skips when PostgreSQL or Redis is not running.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { defaultModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim } from "../src/sim/provider-sim.ts";
import { TenantRepository } from "../src/store/tenant-repository.ts";

const TPM = 2_000;
const REQUESTS = 60;
const MAX_TOKENS = 100;

test("LG-07 three gateway processes on one Redis never admit more than a tenant's tokens per window", async (t) => {
  const pgUrl = await requirePostgres(t);
  const redisUrl = await requireRedis(t);
  if (pgUrl === undefined || redisUrl === undefined) return;
  const schema = await openPostgresTestSchema(pgUrl, {
    system: "llm-gateway",
    prefix: "llm_race",
    prepare: (db) => runMigrations(db, { dir: new URL("../src/store/migrations/", import.meta.url) }),
  });
  t.after(() => schema.drop());
  const tenantId = uniqueName("race").replaceAll(/[^A-Za-z0-9_-]/g, "_");
  const tenants = new TenantRepository(schema.db, { clock: systemClock, randomBytes });
  const created = await tenants.createIfAbsent({ id: tenantId, name: "race", rpm: 1_000_000, tpm: TPM });
  assert.ok(created);
  const sim = createProviderSim({
    rng: seededRandom(7),
    log: { level: "silent" },
    behaviour: {
      models: {
        "gpt-4o-mini": { ...defaultModelProfile, ttftMs: 20, tokensPerS: 5_000, answerTokens: 1_000 },
      },
    },
  });
  const { url: simUrl } = await sim.listen({ port: 0 });
  t.after(() => sim.close());
  const env = {
    ...process.env,
    PORT: "0",
    LOG_LEVEL: "warn",
    DATABASE_URL: pgUrl,
    LLM_GATEWAY_DB_SCHEMA: schema.schema,
    REDIS_URL: redisUrl,
    // A loaded CI machine: a slow counter call must not turn into a 503 mid-race.
    LLM_GATEWAY_REDIS_TIMEOUT_MS: "5000",
    LLM_GATEWAY_UPSTREAM_URL: `${simUrl}/v1`,
    LLM_GATEWAY_MODELS: "gpt-4o-mini",
    LLM_GATEWAY_BOOTSTRAP_TENANT: "off",
    // An hour: no window turns during the race, so the whole race is counted against one budget.
    LLM_GATEWAY_BUDGET_WINDOW_MS: "3600000",
  };
  const gateways: SpawnedChild[] = await Promise.all(
    [0, 1, 2].map(() =>
      spawnChild(new URL("./gateway-child.ts", import.meta.url), {
        env,
        ready: /^ready /,
        readyTimeoutMs: 180_000,
        test: t,
      }),
    ),
  );
  const urls = gateways.map((g) => g.readyLine.split(" ")[1]);
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

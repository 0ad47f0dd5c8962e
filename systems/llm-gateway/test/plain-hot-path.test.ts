/**
 * Plain proxying's hot path without database work: usage rows written in batches after the
 * answer (backpressure when the buffer is full, retries, counted losses, read-your-writes,
 * drain), and the API-key cache (kit's VerifiedKeyCache, tested there) cleared by a revocation.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import type { UsageRecord } from "../src/store/usage-repository.ts";
import { UsageWriter, type UsageWriterOptions } from "../src/store/usage-writer.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

function row(i: number): UsageRecord {
  return {
    tenantId: "acme",
    model: "m",
    servedBy: "m@default",
    outcome: "ok",
    fallback: "none",
    promptTokens: i,
    cachedPromptTokens: 0,
    completionTokens: 1,
    costNanoUsd: 10,
  };
}

/** A usage table in memory whose writes wait until released, and fail while told to. */
function usageTable() {
  const table = {
    rows: [] as UsageRecord[],
    batches: [] as number[],
    failuresLeft: 0,
    gate: Promise.resolve() as Promise<void>,
    recordMany: async (rows: readonly UsageRecord[]) => {
      await table.gate;
      if (table.failuresLeft > 0) {
        table.failuresLeft -= 1;
        throw new Error("database down");
      }
      table.batches.push(rows.length);
      table.rows.push(...rows);
    },
    summary: async () => [
      {
        model: "m",
        servedBy: "m@default",
        requests: table.rows.length,
        cacheHits: 0,
        fallbacks: 0,
        promptTokens: 0,
        cachedPromptTokens: 0,
        completionTokens: 0,
        costNanoUsd: 0,
      },
    ],
  };
  return table;
}

function writerOn(table: ReturnType<typeof usageTable>, options: Partial<UsageWriterOptions> = {}) {
  const fates = { lost: [] as UsageRecord[], direct: 0 };
  const writer = new UsageWriter(table, {
    maxBatch: 100,
    maxPending: 1_000,
    maxWaitMs: 0,
    attempts: 3,
    nowMs: () => 1_000,
    sleep: async () => {},
    onLost: (rows) => fates.lost.push(...rows),
    onBackpressure: () => {
      fates.direct += 1;
    },
    ...options,
  });
  return { writer, fates };
}

describe("the usage writer", () => {
  test("rows are handed over without waiting for the database, written in batches, all read back", async () => {
    const table = usageTable();
    let release!: () => void;
    table.gate = new Promise((resolve) => {
      release = resolve;
    });
    const { writer, fates } = writerOn(table);
    for (let i = 0; i < 250; i++) await writer.record(row(i)); // resolves while the database is blocked
    assert.equal(table.rows.length, 0);
    release();
    const summary = await writer.summary("acme", { fromMs: 0, toMs: 2_000 });
    assert.equal(summary[0]?.requests, 250, "read your writes: the rows recorded before are counted");
    assert.ok(table.batches.length <= 4, `batches: ${table.batches.join(", ")}`);
    assert.ok(table.batches.every((n) => n <= 100));
    assert.equal(table.rows[0]?.createdAtMs, 1_000, "stamped when handed over");
    assert.deepEqual(fates, { lost: [], direct: 0 });
  });

  test("a full buffer is backpressure, never a drop: the request writes its own row and waits for it", async () => {
    const table = usageTable();
    let release!: () => void;
    table.gate = new Promise((resolve) => {
      release = resolve;
    });
    const { writer, fates } = writerOn(table, { maxPending: 5, maxBatch: 5 });
    for (let i = 0; i < 6; i++) await writer.record(row(i)); // 1 in the write, 5 waiting
    let waited = false;
    const blocked = writer.record(row(99)).then(() => {
      waited = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(waited, false, "the 7th row waits for the database");
    release();
    await blocked;
    await writer.drain();
    assert.equal(fates.direct, 1);
    assert.equal(table.rows.length, 7, "every row written");
    assert.deepEqual(fates.lost, []);
  });

  test("a failed batch is retried; rows that fail every attempt are reported lost, never silently", async () => {
    const table = usageTable();
    const { writer, fates } = writerOn(table, { attempts: 3 });
    table.failuresLeft = 2;
    await writer.record(row(1));
    await writer.drain();
    assert.equal(table.rows.length, 1, "written on the third attempt");
    table.failuresLeft = 3;
    await writer.record(row(2));
    await writer.drain();
    assert.equal(table.rows.length, 1);
    assert.deepEqual(
      fates.lost.map((r) => r.promptTokens),
      [2],
    );
  });

  test("a usage read does not wait out the wait for company: the rows handed before it go at once", async () => {
    const table = usageTable();
    // GroupCommit's longest wait: without the read cutting it short, the read would take 10 s.
    const { writer } = writerOn(table, { maxWaitMs: 10_000, maxBatch: 1_000 });
    for (let i = 0; i < 5; i++) await writer.record(row(i));
    assert.equal(table.rows.length, 0, "waiting for company");
    const read = writer.summary("t", { fromMs: 0, toMs: 10_000 });
    const outcome = await Promise.race([
      read.then(() => "read"),
      new Promise((resolve) => setTimeout(() => resolve("still waiting"), 5_000).unref()),
    ]);
    assert.equal(outcome, "read");
    assert.equal(table.rows.length, 5);
  });

  test("drain (shutdown) writes every row handed over", async () => {
    const table = usageTable();
    const { writer } = writerOn(table, { maxWaitMs: 1_000, maxBatch: 1_000 });
    for (let i = 0; i < 30; i++) await writer.record(row(i));
    assert.equal(table.rows.length, 0, "waiting for company");
    await writer.drain();
    assert.equal(table.rows.length, 30);
  });
});

describe("through the gateway", () => {
  const ADMIN = "admin-token-for-the-hot-path-0123456789";
  let f: GatewayFixture;
  before(async () => {
    f = await startGateway({
      env: { LLM_GATEWAY_ADMIN_TOKEN: ADMIN, LLM_GATEWAY_BUDGETS: "false", LLM_GATEWAY_CACHE: "false" },
      profile: { answerTokens: 5 },
    });
  });
  after(() => f?.close());

  const admin = (path: string, init: RequestInit = {}) =>
    fetch(`${f.gateway.url}${path}`, {
      ...init,
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
    });

  test("30 concurrent requests: every usage row is in the usage API right after", async () => {
    await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        f.client.chat.completions.create({
          model: "gpt-4o-mini",
          messages: [{ role: "user", content: `hello ${i}` }],
        }),
      ),
    );
    const res = await fetch(`${f.gateway.url}/v1/usage`, {
      headers: { authorization: `Bearer ${f.apiKey}` },
    });
    const usage = (await res.json()) as { models: Array<{ requests: number }> };
    assert.equal(
      usage.models.reduce((sum, m) => sum + m.requests, 0),
      30,
    );
    const metrics = await (await fetch(`${f.gateway.url}/metrics`)).text();
    assert.match(metrics, /llm_gateway_usage_rows_total\{result="written"\} 30/);
  });

  test("a key revoked through this replica's admin API is refused at once (the cache is cleared)", async () => {
    const created = await admin("/v1/admin/tenants", {
      method: "POST",
      body: JSON.stringify({ id: "revoked-soon", name: "r" }),
    });
    const { apiKey } = (await created.json()) as { apiKey: { key: string; prefix: string } };
    const client = new OpenAI({ baseURL: `${f.gateway.url}/v1`, apiKey: apiKey.key, maxRetries: 0 });
    assert.ok((await client.models.list()).data.length > 0, "the key works (and is now cached)");
    const revoked = await admin(`/v1/admin/tenants/revoked-soon/api-keys/${apiKey.prefix}`, {
      method: "DELETE",
    });
    assert.ok(revoked.status < 300, String(revoked.status));
    await assert.rejects(
      client.models.list(),
      (error: unknown) => (error as { status?: number }).status === 401,
    );
  });
});

/**
 * The semantic cache under more requests than its database can take (issue 21: 500 streams
 * held the pool with a lookup and an insert each and pushed TTFT p99 to 14 s): lookups are
 * bounded — a request that finds them all busy and the queue full, or that waited past the
 * bound, is answered uncached (`skip; busy`) without embedding anything — and inserts go in
 * batches through a bounded writer that sheds rather than queues; both counted in /metrics.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createMetricsRegistry } from "@casebook/infra/http/metrics";
import { SemanticCache } from "../src/api/semantic-cache.ts";
import { type Embedder, lexicalEmbedder } from "../src/domain/embedder.ts";
import { createMetrics } from "../src/metrics.ts";
import type { CacheEntry, SemanticCacheStore } from "../src/store/semantic-cache-store.ts";
import { SemanticCacheWriter } from "../src/store/semantic-cache-writer.ts";

/** A promise and its resolver, to hold a fake database call open. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const log = { warn: () => {} } as never;
const body = (prompt: string) => ({
  model: "gpt-4o-mini",
  temperature: 0,
  messages: [{ role: "user", content: prompt }],
});

async function counter(registry: ReturnType<typeof createMetricsRegistry>, name: string, result: string) {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  const values = (metric?.values ?? []) as Array<{ labels: Record<string, unknown>; value: number }>;
  return values.find((v) => v.labels.result === result)?.value ?? 0;
}

test("cache lookups are bounded: past the slots and the queue a request is answered uncached (skip; busy), embedding nothing, counted shed", async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const metrics = createMetrics(registry, { version: "test" });
  const database = gate();
  let lookups = 0;
  const store = {
    lookup: async () => {
      lookups += 1;
      await database.promise;
      return undefined;
    },
  } as unknown as SemanticCacheStore;
  let embedded = 0;
  const embedder: Embedder = {
    ...lexicalEmbedder,
    embed: (text) => {
      embedded += 1;
      return lexicalEmbedder.embed(text);
    },
  };
  const writer = new SemanticCacheWriter({ insertMany: async () => {} }, { maxBatch: 10, maxPending: 10 });
  const cache = new SemanticCache(
    { lookups: store, writer },
    { enabled: true, threshold: 0.9, ttlMs: 60_000, maxLookups: 1, lookupQueue: 1, lookupWaitMs: 10_000 },
    metrics,
    embedder,
  );
  const first = cache.lookup("acme", "gpt-4o-mini", body("one"), undefined); // holds the slot
  const second = cache.lookup("acme", "gpt-4o-mini", body("two"), undefined); // waits in the queue
  const third = await cache.lookup("acme", "gpt-4o-mini", body("three"), undefined); // queue full
  assert.deepEqual(third, { kind: "skip", why: "busy" });
  await sleep(5);
  assert.equal(lookups, 1, "one lookup at the database at a time");
  assert.equal(embedded, 1, "the queued and the shed request embedded nothing yet");
  database.open();
  assert.equal((await first).kind, "miss");
  assert.equal((await second).kind, "miss", "a queued request gets its slot when one frees in time");
  assert.equal(lookups, 2);
  assert.equal(embedded, 2);
  assert.equal(await counter(registry, "llm_gateway_cache_lookups_total", "shed"), 1);
  assert.equal(await counter(registry, "llm_gateway_cache_lookups_total", "miss"), 2);

  // A wait past the bound is shed too.
  const slow = gate();
  const held = new SemanticCache(
    {
      lookups: {
        lookup: async () => {
          await slow.promise;
          return undefined;
        },
      } as unknown as SemanticCacheStore,
      writer,
    },
    { enabled: true, threshold: 0.9, ttlMs: 60_000, maxLookups: 1, lookupQueue: 8, lookupWaitMs: 20 },
    metrics,
  );
  const holder = held.lookup("acme", "gpt-4o-mini", body("one"), undefined);
  assert.deepEqual(await held.lookup("acme", "gpt-4o-mini", body("two"), undefined), {
    kind: "skip",
    why: "busy",
  });
  slow.open();
  assert.equal((await holder).kind, "miss");
  assert.equal(await counter(registry, "llm_gateway_cache_lookups_total", "shed"), 2);
});

test("cache inserts go in batches through one writer; past its queue an answer is shed, not waited for; counted written and shed", async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  const metrics = createMetrics(registry, { version: "test" });
  const database = gate();
  const batches: number[] = [];
  const writer = new SemanticCacheWriter(
    {
      insertMany: async (entries: readonly CacheEntry[]) => {
        batches.push(entries.length);
        await database.promise;
      },
    },
    { maxBatch: 2, maxPending: 2 },
  );
  const cache = new SemanticCache(
    { lookups: { lookup: async () => undefined } as unknown as SemanticCacheStore, writer },
    { enabled: true, threshold: 0.9, ttlMs: 60_000, maxLookups: 4, lookupQueue: 4, lookupWaitMs: 50 },
    metrics,
  );
  const answer = { content: "a", finishReason: "stop", model: "m", promptTokens: 1, completionTokens: 1 };
  const misses = await Promise.all(
    ["a", "b", "c", "d"].map((p) => cache.lookup("acme", "gpt-4o-mini", body(p), undefined)),
  );
  const remembered = misses.map((miss) => {
    assert.equal(miss.kind, "miss");
    return cache.remember("acme", miss as Extract<typeof miss, { kind: "miss" }>, answer, log);
  });
  // a: written alone (an idle writer goes at once); b, c: waiting (maxPending 2); d: shed at once.
  await remembered[3];
  assert.equal(await counter(registry, "llm_gateway_cache_writes_total", "shed"), 1);
  assert.equal(await counter(registry, "llm_gateway_cache_writes_total", "written"), 0);
  database.open();
  await Promise.all(remembered);
  assert.deepEqual(batches, [1, 2], "the entries that waited went in one INSERT");
  assert.equal(await counter(registry, "llm_gateway_cache_writes_total", "written"), 3);
  await writer.drain();
});

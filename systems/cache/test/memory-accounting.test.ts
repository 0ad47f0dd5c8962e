/**
 * CA-13 (issue 15) What the node says about its memory is true, and maxmemory bounds the process:
 *
 * - INFO memory's `used_memory_rss` is the process's RSS, `used_memory_peak` is at least every
 *   used_memory seen, `mem_fragmentation_ratio` is RSS / used_memory; MEMORY STATS answers with
 *   the same numbers (its `total.allocated` is used_memory).
 * - A node started with maxmemory M (its own process, with its manifest's env as `casebook up`
 *   runs it: a 2 MiB V8 semi-space) that is written 3 × M of 100-byte values stays at RSS ≤
 *   1.3 × M + its idle RSS: eviction frees arena slots that the next values reuse, and the V8
 *   heap holds nothing per key (with Node's default 16 MiB semi-spaces the young generation
 *   alone took up to 30 MiB of the burst, and a loaded CI run went past the bound).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Redis } from "ioredis";
import { startOurNode } from "../bench/bench-targets.ts";
import { entryBytes } from "../src/domain/cache-entry.ts";
import { startCacheNode } from "./cache-node.ts";

const MIB = 1024 * 1024;
const MAXMEMORY_BYTES = 64 * MIB;
const VALUE = "v".repeat(100);
/** Keys per pipeline: bounds the client's buffered replies. */
const CHUNK = 1_000;

function infoFields(info: string): Map<string, string> {
  return new Map(
    info
      .split("\r\n")
      .filter((line) => line.includes(":"))
      .map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 1)]),
  );
}

function pairs(reply: unknown[]): Map<string, unknown> {
  const map = new Map<string, unknown>();
  for (let i = 0; i < reply.length; i += 2) map.set(String(reply[i]), reply[i + 1]);
  return map;
}

async function fill(client: Redis, keys: number, prefix: string): Promise<void> {
  for (let start = 0; start < keys; start += CHUNK) {
    const pipeline = client.pipeline();
    for (let i = start; i < Math.min(keys, start + CHUNK); i++) pipeline.set(`${prefix}:${i}`, VALUE);
    const results = await pipeline.exec();
    const failed = results?.find(([error]) => error !== null);
    if (failed) throw failed[0];
  }
}

describe("memory accounting", () => {
  test("CA-13 INFO memory and MEMORY STATS tell the truth: RSS, peak, fragmentation ratio", async () => {
    const node = await startCacheNode({ maxmemoryBytes: 0, policy: "allkeys-lru" });
    const client = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await client.connect();
      await fill(client, 20_000, "k");
      await client.del(...Array.from({ length: 10_000 }, (_, i) => `k:${i}`));
      const rssNow = process.memoryUsage().rss;
      const info = infoFields(await client.info("memory"));
      const used = Number(info.get("used_memory"));
      const rss = Number(info.get("used_memory_rss"));
      assert.equal(used, node.keyspace.usedBytes);
      assert.equal(used, 10_000 * entryBytes("k:10000", VALUE), "10,000 keys of 7 chars remain");
      assert.ok(
        Math.abs(rss - rssNow) / rssNow < 0.1,
        `used_memory_rss ${rss} vs the process's RSS ${rssNow}`,
      );
      let peak = 0;
      for (let i = 0; i < 20_000; i++) peak += entryBytes(`k:${i}`, VALUE);
      assert.equal(
        Number(info.get("used_memory_peak")),
        peak,
        "the peak is the 20,000 keys before the deletes",
      );
      assert.equal(Number(info.get("mem_fragmentation_ratio")), Number((rss / used).toFixed(2)));
      const stats = pairs((await client.call("MEMORY", "STATS")) as unknown[]);
      assert.equal(stats.get("total.allocated"), used);
      assert.equal(stats.get("keys.count"), 10_000);
      assert.ok((stats.get("peak.allocated") as number) >= used);
      assert.ok((stats.get("arena.reserved") as number) >= 10_000 * 112, "the value arena holds every value");
      for (const field of ["allocator.resident", "node.heap.used", "node.external", "fragmentation"]) {
        assert.ok(stats.has(field), `MEMORY STATS has ${field}`);
      }
    } finally {
      client.disconnect();
      await node.close();
    }
  });

  test("CA-13 a node with maxmemory 64mb written 3 × that stays at RSS ≤ 1.3 × maxmemory + idle RSS", async (t) => {
    const node = await startOurNode("64mb");
    const client = new Redis({
      port: node.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      commandTimeout: 60_000,
    });
    try {
      await client.connect();
      const rss = async () => Number(infoFields(await client.info("memory")).get("used_memory_rss"));
      const idle = await rss();
      const keys = Math.ceil((3 * MAXMEMORY_BYTES) / entryBytes("key:100000", VALUE));
      await fill(client, keys, "key");
      const info = infoFields(await client.info());
      const after = Number(info.get("used_memory_rss"));
      t.diagnostic(
        `idle RSS ${(idle / MIB).toFixed(1)} MiB, after ${keys} SETs ${(after / MIB).toFixed(1)} MiB, used_memory ${(Number(info.get("used_memory")) / MIB).toFixed(1)} MiB, evicted ${info.get("evicted_keys")}`,
      );
      assert.ok(Number(info.get("evicted_keys")) > 0, "the writes went past maxmemory");
      assert.ok(Number(info.get("used_memory")) <= MAXMEMORY_BYTES);
      assert.ok(
        after <= 1.3 * MAXMEMORY_BYTES + idle,
        `RSS ${(after / MIB).toFixed(1)} MiB > 1.3 × 64 MiB + idle ${(idle / MIB).toFixed(1)} MiB`,
      );
    } finally {
      client.disconnect();
      await node.stop();
    }
  });
});

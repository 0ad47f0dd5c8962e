/**
 * CA-01 The API of the text, over the wire with ioredis: get, set with TTL, delete;
 * INCRBY atomic when several connections race on one counter; SET NX as a lock that
 * exactly one of many contenders wins; MGET answering many keys as one command.
 * CA-02 over the wire: keys expire and are reclaimed by the active cycle; a full node
 * evicts, or answers -OOM under noeviction.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { Redis } from "ioredis";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** Bound on any wait for the node to do something in the background. */
const WAIT_LIMIT_MS = 10_000;

/** TTL of the keys the active expiry cycle must reclaim. */
const SHORT_TTL_MS = 1_500;

async function waitFor(what: string, condition: () => boolean): Promise<void> {
  await eventually(condition, { what, timeoutMs: WAIT_LIMIT_MS, intervalMs: 0 });
}

function client(port: number): Redis {
  return new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 5_000 });
}

describe("the text's API over RESP", () => {
  let node: TestNode;
  const clients: Redis[] = [];
  const open = async (count: number) => {
    const opened = Array.from({ length: count }, () => client(node.port));
    clients.push(...opened);
    await Promise.all(opened.map((c) => c.connect()));
    return opened;
  };
  before(async () => {
    node = await startCacheNode({ cron: true });
  });
  after(async () => {
    for (const c of clients) c.disconnect();
    await node.close();
  });

  test("CA-01 GET, SET … EX 300, DEL: the text's calls and replies", async () => {
    const [redis] = await open(1);
    assert.equal(await redis!.set("event:42", "page", "EX", 300), "OK");
    assert.equal(await redis!.get("event:42"), "page");
    assert.equal(await redis!.ttl("event:42"), 300);
    assert.equal(await redis!.del("event:42"), 1);
    assert.equal(await redis!.del("event:42"), 0);
    assert.equal(await redis!.get("event:42"), null);
  });

  test("CA-01 INCRBY is atomic: 8 connections × 500 pipelined INCRBY 3 lose no update", async () => {
    const racers = await open(8);
    const replies = await Promise.all(
      racers.map(async (racer) => {
        const pipeline = racer.pipeline();
        for (let i = 0; i < 500; i++) pipeline.incrby("seats:sold", 3);
        const results = await pipeline.exec();
        return results!.map(([error, value]) => {
          assert.equal(error, null);
          return value as number;
        });
      }),
    );
    const all = replies.flat();
    assert.equal(await racers[0]!.get("seats:sold"), String(8 * 500 * 3));
    assert.equal(new Set(all).size, all.length, "every increment saw a distinct total: none interleaved");
    assert.equal(Math.max(...all), 12_000);
  });

  test("CA-01 SET NX EX is a lock: of 20 racing connections exactly one wins", async () => {
    const racers = await open(20);
    const results = await Promise.all(
      racers.map((racer, i) => racer.set("lock:event:42", `token-${i}`, "EX", 5, "NX")),
    );
    const winners = results.filter((result) => result === "OK");
    assert.equal(winners.length, 1);
    assert.equal(results.filter((result) => result === null).length, 19);
    const holder = await racers[0]!.get("lock:event:42");
    assert.equal(holder, `token-${results.indexOf("OK")}`);
    assert.ok((await racers[0]!.ttl("lock:event:42")) > 0, "the lease expires by itself");
  });

  test("CA-01 MGET of 100 keys is one command and one reply", async () => {
    const [redis] = await open(1);
    const keys = Array.from({ length: 100 }, (_, i) => `mget:${i}`);
    await redis!.mset(...keys.slice(0, 50).flatMap((k) => [k, `v-${k}`]));
    const before = node.server.stats().totalCommands;
    const values = await redis!.mget(...keys);
    assert.equal(node.server.stats().totalCommands - before, 1);
    assert.deepEqual(
      values,
      keys.map((k, i) => (i < 50 ? `v-${k}` : null)),
    );
  });

  test("CA-02 keys expire after their TTL; the active cycle reclaims those nobody reads", async () => {
    const [redis] = await open(1);
    await redis!.flushall();
    const pipeline = redis!.pipeline();
    // Long enough that none expires before DBSIZE even on a loaded machine; short enough to wait for.
    for (let i = 0; i < 1_000; i++) pipeline.set(`short:${i}`, "x", "PX", SHORT_TTL_MS);
    pipeline.set("long", "x", "EX", 300);
    await pipeline.exec();
    assert.equal(await redis!.dbsize(), 1_001);
    // Nobody reads the short keys: only the server cron can remove them.
    await waitFor("the active expiry cycle", () => node.keyspace.size === 1);
    assert.equal(await redis!.get("long"), "x");
    assert.equal(node.keyspace.stats.expiredKeys >= 1_000, true);
  });

  test("CA-02 a full node evicts (allkeys-lru) or answers -OOM (noeviction)", async () => {
    const [redis] = await open(1);
    await redis!.flushall();
    await redis!.config("SET", "maxmemory", "100kb", "maxmemory-policy", "allkeys-lru");
    try {
      const value = "v".repeat(1_000);
      for (let i = 0; i < 300; i++) assert.equal(await redis!.set(`fill:${i}`, value), "OK");
      const info = await redis!.info("stats");
      const evicted = Number(/evicted_keys:(\d+)/.exec(info)![1]);
      assert.ok(evicted > 0, "it evicted to make room");
      assert.equal(node.keyspace.maxmemoryBytes, 102_400, "100kb is 100 × 1024 bytes");
      assert.ok(node.keyspace.usedBytes <= 102_400);
      await redis!.config("SET", "maxmemory-policy", "noeviction");
      await assert.rejects(redis!.set("one-more", value), {
        message: "OOM command not allowed when used memory > 'maxmemory'.",
      });
    } finally {
      await redis!.config("SET", "maxmemory", "0", "maxmemory-policy", "noeviction");
    }
  });
});

/**
 * This node's answers where they depend on its own state rather than on Redis's wording
 * (that part is in commands-conformance): OBJECT FREQ / IDLETIME under each kind of policy,
 * MEMORY USAGE as the accounted bytes, TIME from the node's clock, RANDOMKEY never naming an
 * expired key, and maxmemory accounting that stays exact through every new write command.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { Redis } from "ioredis";
import { entryBytes } from "../src/domain/cache-entry.ts";
import type { Keyspace } from "../src/domain/keyspace.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** Σ entryBytes over the live keys: what used_memory must equal after every write. */
function accountedBytes(keyspace: Keyspace): number {
  let bytes = 0;
  for (const key of [...keyspace.slotIndex.all()]) {
    const entry = keyspace.lookup(key);
    if (entry !== undefined) bytes += entryBytes(entry.key, entry.value);
  }
  return bytes;
}

describe("key introspection and accounting", () => {
  let node: TestNode;
  let redis: Redis;
  const clock = new ManualClock(1_767_225_600_123);
  before(async () => {
    node = await startCacheNode({ clock, policy: "allkeys-lru", maxmemoryBytes: 1_000_000 });
    redis = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    await redis.connect();
  });
  after(async () => {
    redis?.disconnect();
    await node?.close();
  });

  test("CA-18 OBJECT IDLETIME under LRU, OBJECT FREQ under LFU; each refuses under the other", async () => {
    await redis.call("FLUSHALL");
    await redis.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    await redis.call("SET", "k", "v");
    clock.advance(5_400);
    assert.equal(await redis.call("OBJECT", "IDLETIME", "k"), 5);
    assert.equal(await redis.call("OBJECT", "IDLETIME", "k"), 5, "OBJECT is not an access");
    await redis.call("GET", "k");
    assert.equal(await redis.call("OBJECT", "IDLETIME", "k"), 0);
    await assert.rejects(
      redis.call("OBJECT", "FREQ", "k"),
      /^ReplyError: ERR An LFU maxmemory policy is not selected/,
    );
    await redis.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lfu");
    await redis.call("SET", "hot", "v");
    await redis.call("SET", "cold", "v");
    assert.equal(await redis.call("OBJECT", "FREQ", "cold"), 5, "a new key starts at LFU_INIT_VAL");
    for (let i = 0; i < 500; i++) await redis.call("GET", "hot");
    const freq = (await redis.call("OBJECT", "FREQ", "hot")) as number;
    assert.ok(freq > 10, `500 reads raise the logarithmic counter (${freq})`);
    assert.equal(await redis.call("OBJECT", "FREQ", "hot"), freq, "OBJECT is not an access");
    clock.advance(3 * 60_000);
    assert.equal(
      await redis.call("OBJECT", "FREQ", "hot"),
      freq - 3,
      "lfu-decay-time 1: one less per idle minute",
    );
    await assert.rejects(
      redis.call("OBJECT", "IDLETIME", "hot"),
      /^ReplyError: ERR An LFU maxmemory policy is selected/,
    );
  });

  test("CA-19 MEMORY USAGE is the entry's accounted bytes; MEMORY HELP lists USAGE", async () => {
    await redis.call("FLUSHALL");
    await redis.call("SET", "user:1", "x".repeat(1000));
    assert.equal(await redis.call("MEMORY", "USAGE", "user:1"), entryBytes("user:1", "x".repeat(1000)));
    assert.equal(
      await redis.call("MEMORY", "USAGE", "user:1", "SAMPLES", "0"),
      entryBytes("user:1", "x".repeat(1000)),
    );
    assert.equal(node.keyspace.usedBytes, await redis.call("MEMORY", "USAGE", "user:1"));
    assert.match(
      ((await redis.call("MEMORY", "HELP")) as string[]).join("\n"),
      /USAGE <key> \[SAMPLES <count>\]/,
    );
  });

  test("TIME is the node's clock; RANDOMKEY never names an expired key", async () => {
    assert.deepEqual(await redis.call("TIME"), [
      String(Math.floor(clock.nowMs() / 1000)),
      String((clock.nowMs() % 1000) * 1000),
    ]);
    await redis.call("FLUSHALL");
    for (let i = 0; i < 50; i++) node.keyspace.set(`short:${i}`, "v", clock.nowMs() + 10);
    await redis.call("SET", "a", "1");
    await redis.call("SET", "b", "2");
    clock.advance(11);
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) seen.add((await redis.call("RANDOMKEY")) as string);
    assert.deepEqual([...seen].sort(), ["a", "b"]);
    await redis.call("FLUSHALL");
    assert.equal(await redis.call("RANDOMKEY"), null);
  });

  test("CA-13 used_memory stays exact through APPEND SETEX PSETEX SETNX GETEX INCRBYFLOAT, and under maxmemory", async () => {
    await redis.call("FLUSHALL");
    await redis.call("CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    const usedMemory = async () =>
      Number(/used_memory:(\d+)/.exec((await redis.call("INFO", "memory")) as string)![1]);
    const steps: (string | number)[][] = [
      ["APPEND", "a", "x".repeat(100)],
      ["APPEND", "a", "y".repeat(50)],
      ["SETEX", "a", 100, "short"],
      ["PSETEX", "b", 100_000, "z".repeat(300)],
      ["SETNX", "c", "1"],
      ["SETNX", "c", "much longer value"],
      ["GETEX", "b", "PERSIST"],
      ["GETEX", "a", "PXAT", 1],
      ["INCRBYFLOAT", "c", "0.25"],
      ["INCRBYFLOAT", "f", "1e30"],
      ["APPEND", "f", ".5"],
    ];
    for (const step of steps) {
      await redis.call(String(step[0]), ...step.slice(1));
      assert.equal(node.keyspace.usedBytes, accountedBytes(node.keyspace), step.join(" "));
      assert.equal(await usedMemory(), node.keyspace.usedBytes, step.join(" "));
    }
    // Under memory pressure every write evicts first, and usage never passes maxmemory.
    await redis.call("CONFIG", "SET", "maxmemory", "20000");
    for (let i = 0; i < 300; i++) {
      await redis.call("SETEX", `e:${i}`, 100, "v".repeat(i % 200));
      await redis.call("APPEND", `e:${i % 7}`, "w".repeat(40));
      await redis.call("INCRBYFLOAT", `n:${i % 5}`, "1.5");
      assert.ok(node.keyspace.usedBytes <= 20_000, `${node.keyspace.usedBytes} B after step ${i}`);
    }
    assert.equal(node.keyspace.usedBytes, accountedBytes(node.keyspace));
    // Under noeviction a growing write is refused whole.
    await redis.call("CONFIG", "SET", "maxmemory-policy", "noeviction");
    const before = node.keyspace.usedBytes;
    await assert.rejects(redis.call("APPEND", "e:1", "q".repeat(30_000)), /^ReplyError: OOM/);
    await assert.rejects(redis.call("SETEX", "big", 10, "q".repeat(30_000)), /^ReplyError: OOM/);
    assert.equal(node.keyspace.usedBytes, before);
    await redis.call("CONFIG", "SET", "maxmemory", "1000000");
  });
});

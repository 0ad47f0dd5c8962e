/**
 * CA-24 on the node itself: `maxmemory-policy allkeys-w-tinylfu` evicts by W-TinyLFU
 * admission, weighted by each entry's accounted bytes. Proven through the real server
 * (ioredis, cache-aside over a Zipf trace: its hit ratio is at least allkeys-lru's on the
 * same maxmemory) with used_memory ≤ maxmemory checked after every write, and in the
 * keyspace: admission semantics (a SET stores, but a cold key may be evicted at once),
 * exact accounting under random operations, CONFIG SET switching to and from it.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Clock, ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import fc from "fast-check";
import { Redis } from "ioredis";
import { entryBytes, NO_EXPIRY } from "../src/domain/cache-entry.ts";
import type { EvictionPolicyName } from "../src/domain/eviction-policy.ts";
import { WTinyLfuEviction } from "../src/domain/eviction-w-tinylfu.ts";
import { Keyspace, type KeyspaceOptions } from "../src/domain/keyspace.ts";
import { ZipfSampler } from "../src/domain/zipf-trace.ts";
import { startCacheNode } from "./cache-node.ts";

const START_MS = 1_700_000_000_000;

/** A keyspace that checks used ≤ maxmemory after every write the server makes. */
class CheckedKeyspace extends Keyspace {
  writes = 0;
  constructor(options: KeyspaceOptions) {
    super(options);
  }
  override set(key: string, value: string, expiresAtMs: number): boolean {
    const stored = super.set(key, value, expiresAtMs);
    this.#check();
    return stored;
  }
  override setMany(keys: readonly string[], values: readonly string[]): boolean {
    const stored = super.setMany(keys, values);
    this.#check();
    return stored;
  }
  #check(): void {
    this.writes += 1;
    if (this.usedBytes > this.maxmemoryBytes) {
      throw new Error(`used ${this.usedBytes} > maxmemory ${this.maxmemoryBytes} after write ${this.writes}`);
    }
  }
}

const ZIPF_KEYS = 2_000;
const ZIPF_REQUESTS = 8_000;
/** Requests before hits count: both policies start from an empty node. */
const WARMUP_REQUESTS = 2_000;
const VALUE = "v".repeat(64);
/** Room for ~5% of the keys: where admission matters most. */
const ZIPF_MAXMEMORY_BYTES = 100 * entryBytes("zipf:1000", VALUE);

/** Cache-aside through ioredis: GET, and on a miss SET … EX 300. The clock moves 1 ms a request, so LRU sees distinct times. */
async function zipfHitRatio(policy: EvictionPolicyName): Promise<{ hitRatio: number; writes: number }> {
  const clock = new ManualClock(START_MS);
  const keyspace = new CheckedKeyspace({
    clock,
    random: seededRandom(`keyspace-${policy}`),
    maxmemoryBytes: ZIPF_MAXMEMORY_BYTES,
    policy,
  });
  const node = await startCacheNode({ keyspace, clock: clock as Clock });
  const client = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
  const zipf = new ZipfSampler(ZIPF_KEYS, 0.99);
  const random = seededRandom("zipf-trace");
  let hits = 0;
  try {
    await client.connect();
    for (let i = 0; i < ZIPF_REQUESTS; i++) {
      clock.advance(1);
      const key = `zipf:${zipf.sample(random)}`;
      const value = await client.get(key);
      if (value !== null) {
        if (i >= WARMUP_REQUESTS) hits += 1;
        continue;
      }
      assert.equal(await client.set(key, VALUE, "EX", 300), "OK", "a SET always succeeds");
    }
    const info = await client.info("memory");
    assert.ok(Number(/used_memory:(\d+)/.exec(info)![1]) <= ZIPF_MAXMEMORY_BYTES);
  } finally {
    client.disconnect();
    await node.close();
  }
  return { hitRatio: hits / (ZIPF_REQUESTS - WARMUP_REQUESTS), writes: keyspace.writes };
}

describe("allkeys-w-tinylfu through the server", () => {
  test("CA-24 Zipf cache-aside on the node: allkeys-w-tinylfu's hit ratio ≥ allkeys-lru's, maxmemory held after every write", async (t) => {
    const lru = await zipfHitRatio("allkeys-lru");
    const tinyLfu = await zipfHitRatio("allkeys-w-tinylfu");
    assert.ok(lru.writes > 0 && tinyLfu.writes > 0);
    assert.ok(
      tinyLfu.hitRatio >= lru.hitRatio,
      `w-tinylfu ${tinyLfu.hitRatio.toFixed(3)} < lru ${lru.hitRatio.toFixed(3)}`,
    );
    t.diagnostic(
      `hit ratio: allkeys-lru ${lru.hitRatio.toFixed(3)}, allkeys-w-tinylfu ${tinyLfu.hitRatio.toFixed(3)}`,
    );
  });

  test("CA-13 allkeys-w-tinylfu under 2 000 random-size pipelined SETs: used_memory ≤ maxmemory after each, never -OOM", async () => {
    const maxmemoryBytes = 256 * 1024;
    const keyspace = new CheckedKeyspace({
      clock: new ManualClock(START_MS),
      random: seededRandom("load"),
      maxmemoryBytes,
      policy: "allkeys-w-tinylfu",
    });
    const node = await startCacheNode({ keyspace });
    const client = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await client.connect();
      const random = seededRandom("load-sizes");
      const pipeline = client.pipeline();
      for (let i = 0; i < 2_000; i++) {
        const key = `load:${Math.floor(random.next() * 500)}`;
        pipeline.set(key, "x".repeat(1 + Math.floor(random.next() * 8_192)));
        if (i % 3 === 0) pipeline.get(key);
      }
      for (const [error] of (await pipeline.exec())!) assert.equal(error, null);
      assert.equal(keyspace.writes, 2_000);
      assert.ok(keyspace.stats.evictedKeys > 0, "the load overflowed maxmemory");
      assert.equal(
        await client.config("GET", "maxmemory-policy").then((r) => (r as string[])[1]),
        "allkeys-w-tinylfu",
      );
    } finally {
      client.disconnect();
      await node.close();
    }
  });

  test("CONFIG SET maxmemory-policy switches to allkeys-w-tinylfu at runtime and back", async () => {
    const node = await startCacheNode({ maxmemoryBytes: 64 * 1024, policy: "allkeys-lru" });
    const client = new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await client.connect();
      for (let i = 0; i < 50; i++) await client.set(`k${i}`, "x".repeat(100));
      assert.equal(await client.config("SET", "maxmemory-policy", "ALLKEYS-W-TINYLFU"), "OK");
      assert.equal(node.keyspace.policy, "allkeys-w-tinylfu");
      // Lowering maxmemory replays the keys through admission, which evicts down to the new limit.
      assert.equal(await client.config("SET", "maxmemory", String(8 * 1024)), "OK");
      assert.ok(node.keyspace.usedBytes <= 8 * 1024);
      assert.equal(await client.set("after", "y"), "OK");
      assert.equal(await client.config("SET", "maxmemory-policy", "allkeys-lru"), "OK");
      await assert.rejects(client.config("SET", "maxmemory-policy", "w-tinylfu"), /must be one of/);
    } finally {
      client.disconnect();
      await node.close();
    }
  });
});

function tinyLfuKeyspace(maxmemoryBytes: number) {
  const clock = new ManualClock(START_MS);
  const keyspace = new Keyspace({
    clock,
    random: seededRandom(7),
    maxmemoryBytes,
    policy: "allkeys-w-tinylfu",
  });
  return { clock, keyspace };
}

describe("allkeys-w-tinylfu in the keyspace", () => {
  test("CA-24 admission: a cold key's SET stores (true) but it is evicted at once when hot keys fill the node", () => {
    const value = "x".repeat(100);
    const { keyspace } = tinyLfuKeyspace(20 * entryBytes("hot:10", value));
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 20; i++) {
        keyspace.set(`hot:${i}`, value, NO_EXPIRY);
        keyspace.get(`hot:${i}`);
      }
    }
    const hotBefore = keyspace.size;
    // A scan of one-hit wonders: each one loses its duel against a hot key.
    for (let i = 0; i < 200; i++) assert.equal(keyspace.set(`scan:${i}`, value, NO_EXPIRY), true);
    let hotLeft = 0;
    for (let i = 0; i < 20; i++) if (keyspace.lookup(`hot:${i}`) !== undefined) hotLeft += 1;
    assert.ok(hotLeft >= hotBefore - 2, `the scan pushed out hot keys: ${hotLeft} of ${hotBefore} left`);
    assert.ok(keyspace.stats.evictedKeys >= 195, "the scanned keys were evicted, not the hot ones");
    assert.ok(keyspace.usedBytes <= keyspace.maxmemoryBytes);
  });

  test("a value larger than maxmemory is still refused (-OOM), changing nothing", () => {
    const { keyspace } = tinyLfuKeyspace(2_000);
    keyspace.set("small", "x", NO_EXPIRY);
    assert.equal(keyspace.set("huge", "x".repeat(2_000), NO_EXPIRY), false);
    assert.equal(keyspace.setMany(["a", "huge"], ["1", "x".repeat(2_000)]), false);
    assert.equal(keyspace.size, 1);
  });

  test("accounting is exact under random set/mset/get/del/expiry/flush/maxmemory changes (the policy mirrors the keyspace, asserted on every write)", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("set" as const),
        k: fc.nat(30),
        size: fc.nat(600),
        ttl: fc.option(fc.nat(50)),
      }),
      fc.record({ kind: fc.constant("mset" as const), k: fc.nat(30), size: fc.nat(300) }),
      fc.record({ kind: fc.constant("get" as const), k: fc.nat(30) }),
      fc.record({ kind: fc.constant("del" as const), k: fc.nat(30) }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.nat(20) }),
      fc.record({ kind: fc.constant("expire" as const) }),
      fc.record({ kind: fc.constant("flush" as const) }),
      fc.record({ kind: fc.constant("maxmemory" as const), bytes: fc.integer({ min: 1_000, max: 6_000 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const { keyspace, clock } = tinyLfuKeyspace(4_000);
        for (const o of ops) {
          if (o.kind === "set") {
            const expiry = o.ttl === null ? NO_EXPIRY : clock.nowMs() + o.ttl + 1;
            keyspace.set(`k${o.k}`, "x".repeat(o.size), expiry);
          } else if (o.kind === "mset") {
            keyspace.setMany([`k${o.k}`, `k${(o.k + 1) % 31}`, `k${o.k}`], ["a", "y".repeat(o.size), "b"]);
          } else if (o.kind === "get") keyspace.get(`k${o.k}`);
          else if (o.kind === "del") keyspace.delete(`k${o.k}`);
          else if (o.kind === "tick") clock.advance(o.ms);
          else if (o.kind === "expire") keyspace.activeExpire(25);
          else if (o.kind === "flush") keyspace.flush();
          else keyspace.configure({ maxmemoryBytes: o.bytes });
          assert.ok(keyspace.usedBytes <= keyspace.maxmemoryBytes, `used ${keyspace.usedBytes}`);
          let sum = 0;
          for (let i = 0; i <= 30; i++) {
            const entry = keyspace.lookup(`k${i}`);
            if (entry !== undefined) sum += entryBytes(entry.key, entry.value);
          }
          assert.equal(keyspace.usedBytes, sum);
        }
        // One more write runs the keyspace's own check that the policy holds exactly its keys and bytes.
        keyspace.set("final", "z", NO_EXPIRY);
      }),
      { numRuns: 200, seed: 2_424 },
    );
  });

  test("WTinyLfuEviction hands back the keys to delete, the written key included when admission rejects it", () => {
    const policy = new WTinyLfuEviction({ maxmemoryBytes: 1_000, random: seededRandom(3) });
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 4; i++) {
        assert.deepEqual(policy.written(`hot:${i}`, 240), []);
        policy.read(`hot:${i}`);
      }
    }
    assert.equal(policy.weight, 960);
    assert.deepEqual(policy.written("cold", 240), ["cold"]);
    assert.equal(policy.weight, 960);
    policy.removed("hot:0");
    assert.equal(policy.size, 3);
    policy.clear();
    assert.equal(policy.weight, 0);
  });
});

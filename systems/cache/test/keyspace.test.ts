/**
 * The keyspace, deterministically (ManualClock, seeded random): the entry's shape and
 * O(1) costs (CA-08), lazy and active expiry (CA-02), eviction when full and -OOM when
 * nothing may be evicted (CA-02), and exact memory accounting under random operations.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { type RandomSource, seededRandom } from "@casebook/kit/random";
import fc from "fast-check";
import { ENTRY_OVERHEAD_BYTES, entryBytes, NO_EXPIRY } from "../src/domain/cache-entry.ts";
import type { EvictionPolicyName } from "../src/domain/eviction-policy.ts";
import { KEEP_TTL, Keyspace } from "../src/domain/keyspace.ts";

const START_MS = 1_700_000_000_000;

/** A RandomSource that counts its draws: sampling work made visible without timing anything. */
function countingRandom(seed: number): RandomSource & { draws: number } {
  const inner = seededRandom(seed);
  const counter = {
    draws: 0,
    next() {
      counter.draws += 1;
      return inner.next();
    },
  };
  return counter;
}

function keyspaceWith(options: { maxmemoryBytes?: number; policy?: EvictionPolicyName; seed?: number } = {}) {
  const clock = new ManualClock(START_MS);
  const random = countingRandom(options.seed ?? 1);
  const keyspace = new Keyspace({
    clock,
    random,
    maxmemoryBytes: options.maxmemoryBytes ?? 0,
    policy: options.policy ?? "noeviction",
  });
  return { clock, random, keyspace };
}

/** maxmemory that holds exactly `count` entries of key `k:NNNNNN` and a 100-byte value. */
function roomFor(count: number): number {
  return count * entryBytes("k:000000", "v".repeat(100));
}

const key = (i: number) => `k:${String(i).padStart(6, "0")}`;

describe("keyspace", () => {
  test("CA-08 an entry is {key, value, expires_at, lru clock | lfu counter}, in both sampling bags", () => {
    const { keyspace, clock } = keyspaceWith();
    keyspace.set("user:1", "Ada", clock.nowMs() + 60_000);
    const entry = keyspace.lookup("user:1")!;
    // The four fields as a reader reads them (`value` is a getter: copied out of the arena when read).
    const fields = ["access", "expiresAtMs", "key", "value"] as const;
    assert.deepEqual(
      fields.filter((field) => entry[field] !== undefined),
      fields,
    );
    assert.equal(entry.key, "user:1");
    assert.equal(entry.value, "Ada");
    assert.equal(entry.expiresAtMs, START_MS + 60_000);
    assert.deepEqual([keyspace.stats.keys, keyspace.stats.volatileKeys], [1, 1]);
    // Key and value count as their 16-byte arena slots, as Redis counts jemalloc's size classes.
    assert.equal(keyspace.usedBytes, 16 + 16 + ENTRY_OVERHEAD_BYTES);
  });

  test("CA-08 get, set and delete draw no samples; one eviction draws `samples` picks whatever the size", () => {
    const drawsPerEviction: number[] = [];
    for (const size of [1_000, 100_000]) {
      const { keyspace, random } = keyspaceWith({ maxmemoryBytes: roomFor(size), policy: "allkeys-lru" });
      // The one draw at construction is the hash table's seed (key-table.ts).
      const drawsAtStart = random.draws;
      for (let i = 0; i < size; i++) keyspace.set(key(i), "v".repeat(100), NO_EXPIRY);
      keyspace.get(key(7));
      keyspace.delete(key(8));
      keyspace.set(key(8), "v".repeat(100), NO_EXPIRY);
      assert.equal(random.draws - drawsAtStart, 0, "plain reads and writes are hash-table operations");
      keyspace.set(key(size), "v".repeat(100), NO_EXPIRY); // full: needs exactly one eviction
      assert.equal(keyspace.stats.evictedKeys, 1);
      drawsPerEviction.push(random.draws - drawsAtStart);
    }
    assert.deepEqual(drawsPerEviction, [5, 5], "maxmemory-samples = 5 draws, at 1k keys and at 100k keys");
  });

  test("CA-02 a key lives until its expiry instant and is gone 1 ms after (lazy expiry on access)", () => {
    const { keyspace, clock } = keyspaceWith();
    keyspace.set("session", "s1", START_MS + 300_000);
    clock.advance(300_000);
    assert.equal(keyspace.get("session"), "s1", "alive at the instant itself, as in Redis");
    clock.advance(1);
    assert.equal(keyspace.get("session"), undefined);
    assert.equal(keyspace.size, 0);
    assert.equal(keyspace.stats.expiredKeys, 1);
    assert.equal(keyspace.usedBytes, 0);
  });

  test("CA-02 the active cycle reclaims expired keys nobody reads, and never touches keys without TTL", () => {
    const { keyspace, clock } = keyspaceWith();
    for (let i = 0; i < 5_000; i++) keyspace.set(`tmp:${i}`, "x", START_MS + 1_000);
    for (let i = 0; i < 1_000; i++) keyspace.set(`keep:${i}`, "x", NO_EXPIRY);
    clock.advance(1_001);
    const report = keyspace.activeExpire(25);
    // Rounds repeat while > 25% of a sample is expired: all of them are, so it sweeps them all.
    assert.equal(report.expired, 5_000);
    assert.equal(keyspace.size, 1_000);
    assert.equal(keyspace.stats.expiredKeys, 5_000);
    assert.equal(keyspace.activeExpire(25).sampled, 0, "keys without TTL are not even sampled");
  });

  test("CA-02 the active cycle stops repeating when few sampled keys are expired (it leaves them to later cycles)", () => {
    const { keyspace, clock } = keyspaceWith();
    for (let i = 0; i < 10_000; i++) keyspace.set(`t:${i}`, "x", START_MS + (i < 1_000 ? 10 : 3_600_000));
    clock.advance(11);
    const report = keyspace.activeExpire(25);
    assert.equal(report.rounds, 1, "~10% expired in the first sample of 20: no second round");
    assert.equal(report.sampled, 20);
    assert.ok(report.expired <= 20);
  });

  test("CA-02 when full, a write evicts first (allkeys-lru) and usage never passes maxmemory", () => {
    const { keyspace } = keyspaceWith({ maxmemoryBytes: roomFor(100), policy: "allkeys-lru" });
    for (let i = 0; i < 1_000; i++) {
      assert.equal(keyspace.set(key(i), "v".repeat(100), NO_EXPIRY), true);
      assert.ok(keyspace.usedBytes <= keyspace.maxmemoryBytes);
    }
    assert.equal(keyspace.size, 100);
    assert.equal(keyspace.stats.evictedKeys, 900);
  });

  test("CA-02 noeviction refuses a write that does not fit (the server answers -OOM) and changes nothing", () => {
    const { keyspace } = keyspaceWith({ maxmemoryBytes: roomFor(10), policy: "noeviction" });
    for (let i = 0; i < 10; i++) assert.equal(keyspace.set(key(i), "v".repeat(100), NO_EXPIRY), true);
    const used = keyspace.usedBytes;
    assert.equal(keyspace.set("k:000099", "v".repeat(100), NO_EXPIRY), false);
    assert.equal(
      keyspace.set(key(0), "v".repeat(113), NO_EXPIRY),
      false,
      "growing an existing key into a larger slot too",
    );
    assert.equal(keyspace.set(key(0), "v".repeat(10), NO_EXPIRY), true, "shrinking one is fine");
    assert.ok(keyspace.usedBytes < used);
    assert.equal(keyspace.stats.evictedKeys, 0);
  });

  test("CA-02 volatile-* policies evict only keys with a TTL, and refuse when there is none", () => {
    const { keyspace, clock } = keyspaceWith({ maxmemoryBytes: roomFor(10), policy: "volatile-lru" });
    for (let i = 0; i < 5; i++) keyspace.set(key(i), "v".repeat(100), NO_EXPIRY);
    for (let i = 5; i < 10; i++) keyspace.set(key(i), "v".repeat(100), clock.nowMs() + 60_000);
    for (let i = 10; i < 15; i++) assert.equal(keyspace.set(key(i), "v".repeat(100), NO_EXPIRY), true);
    for (let i = 0; i < 5; i++) assert.notEqual(keyspace.lookup(key(i)), undefined, "persistent keys stay");
    assert.equal(keyspace.set(key(99), "v".repeat(100), NO_EXPIRY), false, "no volatile key left: OOM");
  });

  test("volatile-ttl evicts the key that expires soonest", () => {
    const { keyspace, clock } = keyspaceWith({ maxmemoryBytes: roomFor(3), policy: "volatile-ttl" });
    keyspace.set(key(1), "v".repeat(100), clock.nowMs() + 30_000);
    keyspace.set(key(2), "v".repeat(100), clock.nowMs() + 10_000);
    keyspace.set(key(3), "v".repeat(100), clock.nowMs() + 20_000);
    keyspace.set(key(4), "v".repeat(100), clock.nowMs() + 40_000);
    assert.equal(keyspace.lookup(key(2)), undefined);
    assert.equal(keyspace.size, 3);
  });

  test("a value larger than maxmemory is refused without evicting anything", () => {
    const { keyspace } = keyspaceWith({ maxmemoryBytes: roomFor(10), policy: "allkeys-lru" });
    for (let i = 0; i < 10; i++) keyspace.set(key(i), "v".repeat(100), NO_EXPIRY);
    assert.equal(keyspace.set("huge", "h".repeat(roomFor(10)), NO_EXPIRY), false);
    assert.equal(keyspace.size, 10);
  });

  test("MSET is all or nothing under maxmemory; duplicates count once", () => {
    const { keyspace } = keyspaceWith({ maxmemoryBytes: roomFor(4), policy: "noeviction" });
    keyspace.set(key(0), "v".repeat(100), NO_EXPIRY);
    const v = "v".repeat(100);
    assert.equal(keyspace.setMany([key(1), key(2), key(3), key(4)], [v, v, v, v]), false);
    assert.equal(keyspace.size, 1, "nothing written");
    assert.equal(keyspace.setMany([key(1), key(1), key(2), key(3)], [v, v, v, v]), true);
    assert.equal(keyspace.size, 4);
  });

  test("lowering maxmemory at runtime evicts down to it (CONFIG SET maxmemory)", () => {
    const { keyspace } = keyspaceWith({ maxmemoryBytes: roomFor(100), policy: "allkeys-random" });
    for (let i = 0; i < 100; i++) keyspace.set(key(i), "v".repeat(100), NO_EXPIRY);
    keyspace.configure({ maxmemoryBytes: roomFor(40) });
    assert.equal(keyspace.size, 40);
  });

  test("KEEP_TTL keeps an expiry; an overwrite without it clears the expiry", () => {
    const { keyspace, clock } = keyspaceWith();
    keyspace.set("k", "1", clock.nowMs() + 1_000);
    keyspace.set("k", "2", KEEP_TTL);
    assert.equal(keyspace.lookup("k")!.expiresAtMs, START_MS + 1_000);
    keyspace.set("k", "3", NO_EXPIRY);
    assert.equal(keyspace.lookup("k")!.expiresAtMs, NO_EXPIRY);
    assert.equal(keyspace.stats.volatileKeys, 0);
  });

  test("accounting is exact under random operations: used bytes = Σ entry bytes, ≤ maxmemory after every write", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("set" as const),
        k: fc.nat(30),
        size: fc.nat(300),
        ttl: fc.option(fc.nat(50)),
      }),
      fc.record({ kind: fc.constant("del" as const), k: fc.nat(30) }),
      fc.record({ kind: fc.constant("get" as const), k: fc.nat(30) }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.nat(20) }),
      fc.record({ kind: fc.constant("expire" as const) }),
    );
    const policies: EvictionPolicyName[] = [
      "allkeys-lru",
      "allkeys-lfu",
      "volatile-ttl",
      "allkeys-random",
      "noeviction",
    ];
    fc.assert(
      fc.property(fc.constantFrom(...policies), fc.array(op, { maxLength: 200 }), (policy, ops) => {
        const { keyspace, clock } = keyspaceWith({ maxmemoryBytes: 3_000, policy });
        for (const o of ops) {
          if (o.kind === "set") {
            const expiry = o.ttl === null ? NO_EXPIRY : clock.nowMs() + o.ttl + 1;
            keyspace.set(`k${o.k}`, "x".repeat(o.size), expiry);
          } else if (o.kind === "del") keyspace.delete(`k${o.k}`);
          else if (o.kind === "get") keyspace.get(`k${o.k}`);
          else if (o.kind === "tick") clock.advance(o.ms);
          else keyspace.activeExpire(25);
          assert.ok(keyspace.usedBytes <= 3_000, `used ${keyspace.usedBytes}`);
          let sum = 0;
          for (let i = 0; i <= 30; i++) {
            const entry = keyspace.lookup(`k${i}`);
            if (entry !== undefined) sum += entryBytes(entry.key, entry.value);
          }
          assert.equal(keyspace.usedBytes, sum);
        }
      }),
      { numRuns: 300, seed: 8_008 },
    );
  });
});

/**
 * CA-11 Eviction is approximate like Redis's: a few random samples per eviction plus a
 * 16-candidate pool, no global order. Measured against a true LRU run on the same
 * workload: a hot set touched while the cache is filled twice over survives sampled
 * LRU entirely, old untouched keys are nearly all gone, and the keys evicted are almost
 * exactly those true LRU evicts. Random eviction, the baseline, loses half the hot set.
 * LFU keeps frequently read keys and lets yesterday's hot keys decay.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { entryBytes, NO_EXPIRY } from "../src/domain/cache-entry.ts";
import type { EvictionPolicyName } from "../src/domain/eviction-policy.ts";
import { Keyspace } from "../src/domain/keyspace.ts";

const CAPACITY = 2_000;
const HOT = 200;
const VALUE = "v".repeat(100);
const key = (i: number) => `k:${String(i).padStart(6, "0")}`;

/** A true LRU over key names: a Map in recency order (delete + set moves a key to the end). */
class TrueLru {
  readonly #order = new Map<string, true>();
  readonly evicted = new Set<string>();
  readonly capacity: number;
  constructor(capacity: number) {
    this.capacity = capacity;
  }
  touch(k: string): void {
    if (!this.#order.delete(k)) return;
    this.#order.set(k, true);
  }
  insert(k: string): void {
    this.#order.delete(k);
    this.#order.set(k, true);
    if (this.#order.size > this.capacity) {
      const oldest = this.#order.keys().next().value!;
      this.#order.delete(oldest);
      this.evicted.add(oldest);
    }
  }
}

interface Outcome {
  hotSurvival: number;
  oldSurvival: number;
  /** Share of our evicted keys that true LRU evicted too. */
  agreement: number;
}

/**
 * Fill to capacity, touch the hot set, then insert CAPACITY new keys (the cache is filled
 * twice over) while reading one hot key before each insert, round robin.
 */
function runWorkload(policy: EvictionPolicyName, samples: number): Outcome {
  const clock = new ManualClock(1_700_000_000_000);
  const keyspace = new Keyspace({
    clock,
    random: seededRandom(3),
    maxmemoryBytes: CAPACITY * entryBytes(key(0), VALUE),
    policy,
    samples,
  });
  const lru = new TrueLru(CAPACITY);
  const insert = (i: number) => {
    keyspace.set(key(i), VALUE, NO_EXPIRY);
    lru.insert(key(i));
    clock.advance(1);
  };
  const read = (i: number) => {
    keyspace.get(key(i));
    lru.touch(key(i));
    clock.advance(1);
  };
  for (let i = 0; i < CAPACITY; i++) insert(i);
  for (let i = 0; i < HOT; i++) read(i);
  for (let i = CAPACITY; i < 2 * CAPACITY; i++) {
    read(i % HOT);
    insert(i);
  }
  const alive = (from: number, to: number) => {
    let count = 0;
    for (let i = from; i < to; i++) if (keyspace.lookup(key(i)) !== undefined) count += 1;
    return count / (to - from);
  };
  let evicted = 0;
  let agreed = 0;
  for (let i = 0; i < 2 * CAPACITY; i++) {
    if (keyspace.lookup(key(i)) !== undefined) continue;
    evicted += 1;
    if (lru.evicted.has(key(i))) agreed += 1;
  }
  return { hotSurvival: alive(0, HOT), oldSurvival: alive(HOT, CAPACITY), agreement: agreed / evicted };
}

describe("approximate eviction", () => {
  test("CA-11 sampled LRU (5 samples + pool) keeps the recently used and evicts what true LRU evicts", () => {
    const lru = runWorkload("allkeys-lru", 5);
    const random = runWorkload("allkeys-random", 5);
    assert.equal(lru.hotSurvival, 1, "every hot key survives two fills");
    assert.ok(lru.oldSurvival < 0.1, `old untouched keys survive ${lru.oldSurvival}`);
    assert.ok(lru.agreement > 0.9, `${lru.agreement} of evictions agree with true LRU`);
    assert.ok(random.hotSurvival < 0.6, `random eviction keeps only ${random.hotSurvival} of the hot set`);
    assert.ok(random.agreement < 0.75, `random agrees with LRU on ${random.agreement}`);
  });

  test("CA-11 more samples approximate true LRU more closely (maxmemory-samples 10)", () => {
    const five = runWorkload("allkeys-lru", 5);
    const ten = runWorkload("allkeys-lru", 10);
    assert.ok(ten.agreement >= five.agreement, `${ten.agreement} vs ${five.agreement}`);
    assert.ok(ten.oldSurvival <= five.oldSurvival);
  });

  test("CA-11 sampled LFU keeps frequently read keys over keys read once", () => {
    const lfu = runWorkload("allkeys-lfu", 5);
    assert.equal(lfu.hotSurvival, 1);
  });

  test("CA-11 LFU counters decay: keys hot an hour ago lose to keys read a few times now", () => {
    const clock = new ManualClock(1_700_000_000_000);
    const keyspace = new Keyspace({
      clock,
      random: seededRandom(9),
      maxmemoryBytes: 100 * entryBytes(key(0), VALUE),
      policy: "allkeys-lfu",
    });
    for (let i = 0; i < 50; i++) keyspace.set(key(i), VALUE, NO_EXPIRY);
    for (let round = 0; round < 1_000; round++) for (let i = 0; i < 50; i++) keyspace.get(key(i));
    clock.advance(60 * 60_000);
    for (let i = 50; i < 100; i++) keyspace.set(key(i), VALUE, NO_EXPIRY);
    for (let round = 0; round < 20; round++) for (let i = 50; i < 100; i++) keyspace.get(key(i));
    for (let i = 100; i < 150; i++) keyspace.set(key(i), VALUE, NO_EXPIRY);
    let yesterday = 0;
    let today = 0;
    for (let i = 0; i < 50; i++) if (keyspace.lookup(key(i)) !== undefined) yesterday += 1;
    for (let i = 50; i < 100; i++) if (keyspace.lookup(key(i)) !== undefined) today += 1;
    // 1 000 reads put their counters near 25, but 60 idle minutes decayed them to 0.
    assert.ok(yesterday < 10, `${yesterday} of 50 keys hot an hour ago survive`);
    assert.ok(today > 40, `${today} of 50 keys read now survive`);
  });
});

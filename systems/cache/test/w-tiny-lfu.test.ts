/**
 * W-TinyLFU's mechanism: admission by frequency (a one-hit wonder loses to a frequent
 * victim), scan resistance (a hot set survives a scan longer than the cache, where LRU
 * loses it), the segments' budgets, and a model test: under any sequence of sets, gets
 * and deletes with random weights, the bounds hold after every operation, the resident
 * keys are exactly those set and neither deleted nor reported evicted, and `onEvict`
 * fires exactly once per evicted key.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import fc from "fast-check";
import { LruCache } from "../src/domain/lru-cache.ts";
import { WTinyLfu } from "../src/domain/w-tiny-lfu.ts";
import { policyErrors } from "../src/errors.ts";

function cacheOf(maxEntries: number, evicted: string[] = [], maxWeight?: number) {
  return new WTinyLfu<string>({
    maxEntries,
    ...(maxWeight === undefined ? {} : { maxWeight }),
    random: seededRandom("w-tiny-lfu-test"),
    onEvict: (key) => evicted.push(key),
  });
}

describe("W-TinyLFU admission", () => {
  test("a one-hit wonder is rejected against a frequent victim", () => {
    const evicted: string[] = [];
    const cache = cacheOf(100, evicted);
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 100; i++) if (!cache.get(`hot:${i}`)) cache.set(`hot:${i}`);
    }
    assert.equal(cache.size, 100);
    assert.equal(evicted.length, 0);
    cache.set("once"); // enters the window, pushing the window's previous key into a duel
    cache.set("next"); // pushes "once" out of the window: candidate "once" (frequency 1) meets a hot victim
    assert.ok(evicted.includes("once"), `evicted: ${evicted.join(", ")}`);
    assert.equal(cache.has("once"), false);
    assert.ok(cache.frequency("once") < cache.frequency("hot:50"));
    assert.equal(cache.size, 100);
  });

  test("a candidate more frequent than the victim is admitted, and the victim evicted", () => {
    const evicted: string[] = [];
    const cache = cacheOf(100, evicted);
    for (let i = 0; i < 100; i++) cache.set(`cold:${i}`); // each written once: frequency 1
    for (let i = 0; i < 3; i++) cache.set("popular"); // frequency 3, resident in the window
    const before = evicted.length;
    cache.set("pusher"); // pushes "popular" out of the window into a duel it wins
    assert.ok(cache.has("popular"), "the frequent candidate was admitted");
    assert.equal(evicted.length, before + 1, `exactly one victim: ${evicted.slice(before).join(", ")}`);
    assert.match(evicted.at(-1)!, /^cold:/);
  });

  test("a hot set survives a scan 100x the cache, read during it; LRU loses it", () => {
    const hot = Array.from({ length: 50 }, (_, i) => `hot:${i}`);
    const tiny = cacheOf(100);
    const lru = new LruCache<string>({ maxEntries: 100 });
    const read = (key: string) => {
      const hits = [tiny.get(key), lru.get(key)];
      if (!hits[0]) tiny.set(key);
      if (!hits[1]) lru.set(key);
      return hits;
    };
    for (let round = 0; round < 5; round++) for (const key of hot) read(key);
    const hotHits = [0, 0];
    let hotReads = 0;
    for (let i = 0; i < 10_000; i++) {
      read(`scan:${i}`);
      // The application keeps reading its hot set while the scan runs: one hot read per 10 scan keys.
      if (i % 10 === 9) {
        const [tinyHit, lruHit] = read(hot[hotReads++ % hot.length]!);
        // Counted once the scan has passed the cache's size: before that LRU still holds some.
        if (i >= 100) {
          hotHits[0]! += Number(tinyHit);
          hotHits[1]! += Number(lruHit);
        }
      }
    }
    assert.equal(hotHits[0], hotReads - 10, "W-TinyLFU: every hot read during the scan hits");
    assert.equal(hotHits[1], 0, "LRU: the scan flushed every hot key before its next read");
    assert.equal(hot.filter((key) => tiny.has(key)).length, 50);
  });

  test("a probation hit promotes to protected; protected overflow is demoted, not evicted", () => {
    const cache = cacheOf(100);
    for (let i = 0; i < 100; i++) cache.set(`k:${i}`);
    assert.deepEqual(cache.regionSizes(), { window: 1, probation: 99, protected: 0 });
    for (let i = 0; i < 99; i++) cache.get(`k:${i}`);
    // Main is 99 entries; protected holds at most 80% of it (79), the rest is demoted.
    assert.deepEqual(cache.regionSizes(), { window: 1, probation: 20, protected: 79 });
    assert.equal(cache.size, 100);
  });
});

describe("W-TinyLFU bounds and weights", () => {
  test("total weight never exceeds maxWeight; an entry heavier than the cache is evicted at once", () => {
    const evicted: string[] = [];
    const cache = cacheOf(1_000, evicted, 10_000);
    for (let i = 0; i < 200; i++) {
      cache.set(`v:${i}`, 100 + ((i * 37) % 400));
      assert.ok(cache.weight <= 10_000, `weight ${cache.weight}`);
    }
    assert.equal(cache.set("huge", 10_001), false);
    assert.equal(cache.has("huge"), false);
    assert.equal(evicted.at(-1), "huge");
    assert.ok(cache.weight <= 10_000);
  });

  test("a weight update that overflows the cache evicts others, then delete frees its weight", () => {
    const evicted: string[] = [];
    const cache = cacheOf(10, evicted, 1_000);
    for (let i = 0; i < 10; i++) cache.set(`k:${i}`, 100);
    assert.equal(cache.weight, 1_000);
    cache.set("k:9", 500); // +400: the four oldest of probation make room
    assert.deepEqual(evicted, ["k:0", "k:1", "k:2", "k:3"]);
    assert.equal(cache.weightOf("k:9"), 500);
    assert.equal(cache.weight, 1_000);
    assert.equal(cache.delete("k:9"), true);
    assert.equal(cache.weight, 500);
    assert.equal(cache.delete("absent"), false);
  });

  test("clear empties every region without reporting evictions", () => {
    const evicted: string[] = [];
    const cache = cacheOf(10, evicted, 1_000);
    for (let i = 0; i < 10; i++) cache.set(`k:${i}`, 10);
    cache.get("k:0");
    cache.clear();
    assert.equal(cache.size, 0);
    assert.equal(cache.weight, 0);
    assert.deepEqual([...cache.keys()], []);
    assert.equal(evicted.length, 0);
    assert.equal(cache.set("k:0", 10), true, "usable again after clear");
  });

  test("bad options and weights are refused with stable codes", () => {
    const random = seededRandom(1);
    assert.throws(
      () => new WTinyLfu({ maxEntries: 0, random }),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID"),
    );
    assert.throws(
      () => new WTinyLfu({ maxEntries: 10, windowFraction: 2, random }),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID"),
    );
    const cache = new WTinyLfu<string>({ maxEntries: 10, random });
    for (const weight of [-1, 1.5, Number.NaN]) {
      assert.throws(
        () => cache.set("k", weight),
        (e) => policyErrors.is(e, "CACHE_WEIGHT_INVALID"),
      );
    }
  });
});

type Op =
  | { kind: "set"; key: number; weight: number }
  | { kind: "get"; key: number }
  | { kind: "delete"; key: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant("set" as const), key: fc.nat(30), weight: fc.nat(40) }),
  },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("get" as const), key: fc.nat(30) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("delete" as const), key: fc.nat(30) }) },
);

describe("W-TinyLFU model test", () => {
  test("bounds hold, resident keys match the model, onEvict fires once per evicted key", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.option(fc.integer({ min: 1, max: 150 }), { nil: undefined }),
        fc.array(op, { maxLength: 300, size: "max" }),
        fc.integer(),
        fc.boolean(),
        (maxEntries, maxWeight, ops, seed, doorkeeper) => {
          const model = new Set<number>();
          let evictedNow: number[] = [];
          const cache = new WTinyLfu<number>({
            maxEntries,
            ...(maxWeight === undefined ? {} : { maxWeight }),
            random: seededRandom(seed),
            doorkeeper,
            onEvict: (key) => {
              assert.ok(model.has(key), `onEvict(${key}) for a key the model does not hold`);
              model.delete(key);
              evictedNow.push(key);
            },
          });
          for (const o of ops) {
            evictedNow = [];
            if (o.kind === "set") {
              model.add(o.key);
              const resident = cache.set(o.key, o.weight);
              // Resident after set, unless this very set evicted it (rejected or too heavy).
              assert.equal(resident, !evictedNow.includes(o.key));
            } else if (o.kind === "get") {
              assert.equal(cache.get(o.key), model.has(o.key), `get(${o.key})`);
            } else {
              assert.equal(cache.delete(o.key), model.delete(o.key), `delete(${o.key})`);
            }
            assert.equal(new Set(evictedNow).size, evictedNow.length, "no key reported twice in one call");
            assert.ok(cache.size <= maxEntries, `size ${cache.size} > ${maxEntries}`);
            assert.ok(cache.weight <= (maxWeight ?? Infinity), `weight ${cache.weight} > ${maxWeight}`);
            assert.deepEqual(
              [...cache.keys()].sort((a, b) => a - b),
              [...model].sort((a, b) => a - b),
            );
            const sizes = cache.regionSizes();
            assert.equal(sizes.window + sizes.probation + sizes.protected, cache.size);
          }
        },
      ),
      { numRuns: 300, seed: 20_040 },
    );
  });
});

/**
 * Picks the key to evict under a maxmemory policy (CA-02, CA-11), as Redis does:
 * sample `samples` random candidates (all keys, or only those with a TTL), score them
 * (idle time, 255 − LFU counter, or nearness of expiry), merge them into the eviction
 * pool and evict the pool's best candidate still in the keyspace. Random policies skip
 * the pool. Cost per eviction: `samples` random picks plus a 16-slot pool update,
 * whatever the keyspace's size (CA-08).
 *
 * @example
 * const evictor = new Evictor();
 * const victim = evictor.pickVictim({ all, ttl }, evictionPolicy("allkeys-lru"), {
 *   samples: 5, nowMs: clock.nowMs(), lfu: defaultLfuParams, random: rng });
 */
import type { RandomSource } from "@casebook/kit/random";
import type { CacheEntry } from "./cache-entry.ts";
import type { EntryBag } from "./entry-bag.ts";
import { lfuScore } from "./eviction-lfu.ts";
import { lruIdleMs } from "./eviction-lru.ts";
import type { EvictionPolicy } from "./eviction-policy.ts";
import { EvictionPool } from "./eviction-pool.ts";
import { randomVictim } from "./eviction-random.ts";
import { ttlScore } from "./eviction-ttl.ts";
import type { LfuParams } from "./lfu-counter.ts";

export interface EvictionBags {
  readonly all: EntryBag;
  readonly ttl: EntryBag;
}

export interface PickOptions {
  /** maxmemory-samples: candidates drawn per eviction (Redis default 5; 10 is close to true LRU). */
  readonly samples: number;
  readonly nowMs: number;
  readonly lfu: LfuParams;
  readonly random: RandomSource;
}

const isInKeyspace = (entry: CacheEntry) => entry.allSlot >= 0;
const hasTtl = (entry: CacheEntry) => entry.ttlSlot >= 0;

function score(policy: EvictionPolicy, entry: CacheEntry, options: PickOptions): number {
  // W-TinyLFU evicts through its own structure; an explicit evictOne() falls back to sampled LRU.
  if (policy.rank === "lru" || policy.rank === "w-tinylfu") return lruIdleMs(entry.access, options.nowMs);
  if (policy.rank === "lfu") return lfuScore(entry.access, options.nowMs, options.lfu);
  return ttlScore(entry.expiresAtMs);
}

export class Evictor {
  readonly #pool = new EvictionPool();
  #poolPolicy: EvictionPolicy | undefined;

  /** The victim under `policy`, or undefined when there is none (noeviction, or no candidate key). */
  pickVictim(bags: EvictionBags, policy: EvictionPolicy, options: PickOptions): CacheEntry | undefined {
    if (policy.rank === "none") return undefined;
    const bag = policy.keys === "all" ? bags.all : bags.ttl;
    if (bag.size === 0) return undefined;
    if (policy.rank === "random") return randomVictim(bag, options.random);
    if (this.#poolPolicy !== policy) {
      // Scores of different policies do not compare: start the pool afresh.
      this.#pool.clear();
      this.#poolPolicy = policy;
    }
    for (let i = 0; i < options.samples; i++) {
      const candidate = bag.pick(options.random)!;
      this.#pool.offer(candidate, score(policy, candidate, options));
    }
    // The candidates just sampled are alive, so this finds one.
    return this.#pool.popBest(policy.keys === "all" ? isInKeyspace : hasTtl);
  }

  /** Forgets pooled candidates (after FLUSHALL, so the pool holds no flushed entries). */
  reset(): void {
    this.#pool.clear();
  }
}

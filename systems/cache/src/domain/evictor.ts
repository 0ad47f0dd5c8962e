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
 * const victim = evictor.pickVictim(keyspaceRecords, evictionPolicy("allkeys-lru"), {
 *   samples: 5, nowMs: clock.nowMs(), lfu: defaultLfuParams, random: rng }); // a key
 */
import type { RandomSource } from "@casebook/kit/random";
import { lfuScore } from "./eviction-lfu.ts";
import { lruIdleMs } from "./eviction-lru.ts";
import type { EvictionCandidates, EvictionPolicy } from "./eviction-policy.ts";
import { EvictionPool } from "./eviction-pool.ts";
import { randomVictim } from "./eviction-random.ts";
import { ttlScore } from "./eviction-ttl.ts";
import type { LfuParams } from "./lfu-counter.ts";

export interface PickOptions {
  /** maxmemory-samples: candidates drawn per eviction (Redis default 5; 10 is close to true LRU). */
  readonly samples: number;
  readonly nowMs: number;
  readonly lfu: LfuParams;
  readonly random: RandomSource;
}

function score(policy: EvictionPolicy, source: EvictionCandidates, id: number, options: PickOptions): number {
  // W-TinyLFU evicts through its own structure; an explicit evictOne() falls back to sampled LRU.
  if (policy.rank === "lru" || policy.rank === "w-tinylfu")
    return lruIdleMs(source.accessOf(id), options.nowMs);
  if (policy.rank === "lfu") return lfuScore(source.accessOf(id), options.nowMs, options.lfu);
  return ttlScore(source.expiresAtOf(id));
}

export class Evictor {
  readonly #pool = new EvictionPool();
  #poolPolicy: EvictionPolicy | undefined;

  /** The key to evict under `policy`, or undefined when there is none (noeviction, or no candidate key). */
  pickVictim(source: EvictionCandidates, policy: EvictionPolicy, options: PickOptions): string | undefined {
    if (policy.rank === "none") return undefined;
    const keys = policy.keys === "all" ? "all" : "ttl";
    if (source.count(keys) === 0) return undefined;
    if (policy.rank === "random") return randomVictim(source, keys, options.random);
    if (this.#poolPolicy !== policy) {
      // Scores of different policies do not compare: start the pool afresh.
      this.#pool.clear();
      this.#poolPolicy = policy;
    }
    for (let i = 0; i < options.samples; i++) {
      const id = source.sample(keys, options.random);
      this.#pool.offer(source.keyOf(id), score(policy, source, id, options));
    }
    // The candidates just sampled are alive, so this finds one.
    return this.#pool.popBest((key) => source.holds(key, keys));
  }

  /** Forgets pooled candidates (after FLUSHALL, so the pool holds no flushed keys). */
  reset(): void {
    this.#pool.clear();
  }
}

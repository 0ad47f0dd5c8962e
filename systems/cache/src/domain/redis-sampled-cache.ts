/**
 * A model of Redis's approximated eviction (CA-11), as a reference policy for the hit
 * ratio study: no global order, just a per-key stamp, and on each eviction 5 random keys
 * are sampled into a pool of the 16 best candidates seen so far; the best candidate that
 * still exists is evicted. The pool is what makes 5 samples behave close to true LRU.
 *
 * - `allkeys-lru`: the stamp is the LRU clock in whole seconds (Redis's resolution), and a
 *   key's score is its idle time.
 * - `allkeys-lfu`: the stamp is a Morris counter (morris-counter.ts) decayed by idle
 *   minutes, and the score is 255 minus the decayed counter.
 * - `volatile-ttl`: the stamp is the expiry a write sets (now + `ttlMs`; a read does not
 *   move it), and the nearest expiry is the best victim. With one TTL for every key, as in
 *   the study, this is FIFO by last write: the "TTL-based" row of CA-24. The model orders
 *   by expiry only; expiring keys on time is the keyspace's job.
 *
 * Faithful to evict.c in: the pool's sorted insertion (a full pool drops its worst), pool
 * entries keeping the score they were sampled with, ghosts (keys gone since they were
 * pooled) skipped, and eviction before the write so the new key is never its own victim.
 * Differs in: samples are uniform with replacement (Redis takes up to 5 keys from adjacent
 * hash buckets), and the clocks do not wrap (24-bit seconds, 16-bit minutes in Redis).
 *
 * @example
 * const cache = new RedisSampledCache<number>({
 *   maxEntries: 1_000, policy: "lru", clock: new ManualClock(), random: seededRandom(1),
 * });
 * if (!cache.get(7)) cache.set(7);
 */
import type { Clock } from "@casebook/kit/clock";
import { int, type RandomSource } from "@casebook/kit/random";
import { requireInteger, requireWeight } from "../errors.ts";
import {
  type CacheBounds,
  type CacheBoundsOptions,
  type EvictionListener,
  exceeds,
  notifyEvicted,
  resolveBounds,
} from "./cache-bounds.ts";
import { LFU_INIT_VAL, lfuDecay, lfuLogIncrement, MAX_LFU_COUNTER } from "./morris-counter.ts";

export type RedisEvictionPolicy = "lru" | "lfu" | "ttl";

export interface RedisSampledCacheOptions<K> extends CacheBoundsOptions {
  readonly policy: RedisEvictionPolicy;
  readonly clock: Clock;
  readonly random: RandomSource;
  /** maxmemory-samples (Redis default 5). */
  readonly samples?: number;
  /** EVPOOL_SIZE (16 in Redis). */
  readonly poolSize?: number;
  /** lfu-log-factor (10). */
  readonly lfuLogFactor?: number;
  /** lfu-decay-time in minutes (1); 0 disables decay. */
  readonly lfuDecayTimeMin?: number;
  /** LRU_CLOCK_RESOLUTION (1000 ms). */
  readonly lruClockResolutionMs?: number;
  /** The TTL every write sets, for the `ttl` policy (300 s, the text's EX 300). */
  readonly ttlMs?: number;
  readonly onEvict?: EvictionListener<K>;
}

const MINUTE_MS = 60_000;
/**
 * Bound on sample-and-pick rounds for one eviction: a round finds a victim unless every
 * pooled key was a ghost, and a round removes the ghosts it meets, so the second round
 * succeeds; the third is margin.
 */
const MAX_EVICTION_ROUNDS = 3;

export class RedisSampledCache<K> {
  readonly #bounds: CacheBounds;
  readonly #policy: RedisEvictionPolicy;
  readonly #clock: Clock;
  readonly #random: RandomSource;
  readonly #samples: number;
  readonly #poolSize: number;
  readonly #lfuLogFactor: number;
  readonly #lfuDecayTimeMin: number;
  readonly #lruResolutionMs: number;
  readonly #ttlMs: number;
  readonly #onEvict: EvictionListener<K> | undefined;
  // Dense arrays (slot → key, weight, stamp, counter) so a uniform random sample is O(1).
  readonly #keys: K[] = [];
  readonly #weights: number[] = [];
  /** LRU: clock in resolution units; LFU: minute of the last decrement (Redis's ldt); TTL: expiry ms. */
  readonly #stamps: number[] = [];
  readonly #counters: number[] = [];
  readonly #slots = new Map<K, number>();
  // The eviction pool, sorted by ascending score: the best candidate is last.
  readonly #poolKeys: K[] = [];
  readonly #poolScores: number[] = [];
  #weight = 0;

  constructor(options: RedisSampledCacheOptions<K>) {
    this.#bounds = resolveBounds(options);
    this.#policy = options.policy;
    this.#clock = options.clock;
    this.#random = options.random;
    this.#samples = options.samples ?? 5;
    this.#poolSize = options.poolSize ?? 16;
    this.#lfuLogFactor = options.lfuLogFactor ?? 10;
    this.#lfuDecayTimeMin = options.lfuDecayTimeMin ?? 1;
    this.#lruResolutionMs = options.lruClockResolutionMs ?? 1_000;
    this.#ttlMs = options.ttlMs ?? 300_000;
    requireInteger("samples", this.#samples, 1, 64);
    requireInteger("poolSize", this.#poolSize, 1, 1_024);
    requireInteger("lfuLogFactor", this.#lfuLogFactor, 0, 1_000_000);
    requireInteger("lfuDecayTimeMin", this.#lfuDecayTimeMin, 0, 65_535);
    requireInteger("lruClockResolutionMs", this.#lruResolutionMs, 1, 3_600_000);
    requireInteger("ttlMs", this.#ttlMs, 1, Number.MAX_SAFE_INTEGER);
    this.#onEvict = options.onEvict;
  }

  get size(): number {
    return this.#slots.size;
  }

  has(key: K): boolean {
    return this.#slots.has(key);
  }

  /** True on a hit, which touches the key (LRU stamp, or LFU counter). */
  get(key: K): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    this.#touch(slot);
    return true;
  }

  /** A write: evicts first (as Redis does before a command), then stores; true when resident. */
  set(key: K, weight = 1): boolean {
    requireWeight(key, weight);
    const evicted: Array<{ key: K; weight: number }> = [];
    const slot = this.#slots.get(key);
    if (slot !== undefined) {
      this.#weight += weight - this.#weights[slot]!;
      this.#weights[slot] = weight;
      this.#touch(slot);
      if (this.#policy === "ttl") this.#stamps[slot] = this.#clock.nowMs() + this.#ttlMs;
    } else {
      this.#evictWhile(() => exceeds(this.#bounds, this.#slots.size + 1, this.#weight + weight), evicted);
      this.#insert(key, weight);
    }
    this.#evictWhile(() => exceeds(this.#bounds, this.#slots.size, this.#weight), evicted);
    notifyEvicted(evicted, this.#onEvict);
    return this.#slots.has(key);
  }

  /** An explicit removal; `onEvict` is not called. A pooled copy of the key becomes a ghost. */
  delete(key: K): boolean {
    const slot = this.#slots.get(key);
    if (slot === undefined) return false;
    this.#removeSlot(slot);
    return true;
  }

  #insert(key: K, weight: number): void {
    const slot = this.#keys.length;
    this.#keys.push(key);
    this.#weights.push(weight);
    this.#stamps.push(this.#initialStamp());
    this.#counters.push(LFU_INIT_VAL);
    this.#slots.set(key, slot);
    this.#weight += weight;
  }

  #initialStamp(): number {
    if (this.#policy === "lru") return this.#lruClock();
    if (this.#policy === "lfu") return this.#minutes();
    return this.#clock.nowMs() + this.#ttlMs;
  }

  /** A read's effect on the stamp: LRU and LFU record it, a TTL does not move on reads. */
  #touch(slot: number): void {
    if (this.#policy === "ttl") return;
    if (this.#policy === "lru") {
      this.#stamps[slot] = this.#lruClock();
      return;
    }
    const decayed = this.#decayedCounter(slot);
    this.#counters[slot] = lfuLogIncrement(decayed, this.#lfuLogFactor, this.#random);
    this.#stamps[slot] = this.#minutes();
  }

  #lruClock(): number {
    return Math.floor(this.#clock.nowMs() / this.#lruResolutionMs);
  }

  #minutes(): number {
    return Math.floor(this.#clock.nowMs() / MINUTE_MS);
  }

  #decayedCounter(slot: number): number {
    const elapsedMin = this.#minutes() - this.#stamps[slot]!;
    return lfuDecay(this.#counters[slot]!, elapsedMin, this.#lfuDecayTimeMin);
  }

  /** Higher is a better victim: idle time (LRU), 255 − decayed counter (LFU), sooner expiry (TTL). */
  #score(slot: number): number {
    if (this.#policy === "lru") return (this.#lruClock() - this.#stamps[slot]!) * this.#lruResolutionMs;
    if (this.#policy === "lfu") return MAX_LFU_COUNTER - this.#decayedCounter(slot);
    return -this.#stamps[slot]!;
  }

  #evictWhile(over: () => boolean, evicted: Array<{ key: K; weight: number }>): void {
    // Each pass evicts one key: bounded by the keys held.
    for (let guard = this.#slots.size; guard > 0 && over(); guard--) {
      const slot = this.#pickVictim();
      evicted.push({ key: this.#keys[slot]!, weight: this.#weights[slot]! });
      this.#removeSlot(slot);
    }
  }

  #pickVictim(): number {
    for (let round = 0; round < MAX_EVICTION_ROUNDS; round++) {
      this.#populatePool();
      const slot = this.#takeBestFromPool();
      if (slot !== undefined) return slot;
    }
    throw new Error("invariant: a non-empty cache yields a victim within MAX_EVICTION_ROUNDS rounds");
  }

  /** evictionPoolPopulate: sample keys and insert each into the sorted pool. */
  #populatePool(): void {
    for (let i = 0; i < this.#samples; i++) {
      const slot = int(this.#random, this.#keys.length);
      this.#poolInsert(this.#keys[slot]!, this.#score(slot));
    }
  }

  #poolInsert(key: K, score: number): void {
    const keys = this.#poolKeys;
    const scores = this.#poolScores;
    let at = 0;
    while (at < keys.length && scores[at]! < score) at++;
    if (at === 0 && keys.length === this.#poolSize) return; // no better than the worst of a full pool
    // Shifting by hand: splice allocates, and this runs 5 times per eviction.
    if (keys.length < this.#poolSize) {
      keys.push(key);
      scores.push(score);
      for (let i = keys.length - 1; i > at; i--) {
        keys[i] = keys[i - 1]!;
        scores[i] = scores[i - 1]!;
      }
    } else {
      // Full: drop the worst (index 0) and insert just below `at`.
      at--;
      for (let i = 0; i < at; i++) {
        keys[i] = keys[i + 1]!;
        scores[i] = scores[i + 1]!;
      }
    }
    keys[at] = key;
    scores[at] = score;
  }

  /** From the best pooled candidate down: the first that still exists; ghosts are dropped. */
  #takeBestFromPool(): number | undefined {
    // Bounded by the pool's size: each pass pops one entry.
    for (let guard = this.#poolKeys.length; guard > 0; guard--) {
      const key = this.#poolKeys.pop()!;
      this.#poolScores.pop();
      const slot = this.#slots.get(key);
      if (slot !== undefined) return slot;
    }
    return undefined;
  }

  /** Swap-remove: the last slot moves into the hole, so the arrays stay dense. */
  #removeSlot(slot: number): void {
    const key = this.#keys[slot]!;
    this.#weight -= this.#weights[slot]!;
    this.#slots.delete(key);
    const last = this.#keys.length - 1;
    if (slot !== last) {
      const movedKey = this.#keys[last]!;
      this.#keys[slot] = movedKey;
      this.#weights[slot] = this.#weights[last]!;
      this.#stamps[slot] = this.#stamps[last]!;
      this.#counters[slot] = this.#counters[last]!;
      this.#slots.set(movedKey, slot);
    }
    this.#keys.pop();
    this.#weights.pop();
    this.#stamps.pop();
    this.#counters.pop();
  }
}

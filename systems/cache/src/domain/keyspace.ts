/**
 * One node's keyspace (CA-08): a hash table key → entry with O(1) get, set and delete,
 * plus the two sampling bags eviction and expiry draw from. Pure: time comes from the
 * injected Clock, randomness (sampling, LFU increments) from the injected RandomSource.
 *
 * - Expiry (CA-02): lazy on every access, plus `activeExpire` (Redis's sampling cycle),
 *   which the server runs from a timer.
 * - maxmemory (CA-02, CA-13): every entry is accounted (`entryBytes`); a write that would
 *   take `usedBytes` over `maxmemoryBytes` first evicts under the policy (CA-11), and when
 *   nothing can be evicted (noeviction, no volatile key, a value larger than maxmemory) the
 *   write is refused (`false`: the command layer answers -OOM). So after every write,
 *   `usedBytes <= maxmemoryBytes` holds; it is asserted.
 * - `allkeys-w-tinylfu` (CA-24) is not sampled: a `WTinyLfuEviction` mirrors every key with
 *   its accounted bytes and evicts after each write, by admission. A SET then always stores
 *   (`true`) but its key may be evicted at once when admission rejects it; a value larger than
 *   maxmemory is still refused. MSET stores every pair, each through admission.
 * - An optional observer hears of every key removed (and why) and of flushes, so the cluster
 *   layer can replicate expirations and evictions as deletions.
 * - Every key is also indexed by hash slot (`slotIndex`), in standalone mode too: SCAN walks
 *   it slot by slot. The index changes only when a key is created or removed, never on an
 *   overwrite, so a SET of an existing key pays nothing for it.
 *
 * @example
 * const keyspace = new Keyspace({ clock, random: seededRandom(1), maxmemoryBytes: 1_000_000,
 *   policy: "allkeys-lru" });
 * keyspace.set("k", "v", clock.nowMs() + 60_000); // true
 * keyspace.get("k");                               // "v"
 * keyspace.stats.hits;                             // 1
 */
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import { type ActiveExpiryReport, type ExpiryTarget, runActiveExpiry } from "./active-expiry.ts";
import { type CacheEntry, entryBytes, NO_EXPIRY } from "./cache-entry.ts";
import { EntryBag } from "./entry-bag.ts";
import { lruClock } from "./eviction-lru.ts";
import { type EvictionPolicy, type EvictionPolicyName, evictionPolicy } from "./eviction-policy.ts";
import { WTinyLfuEviction } from "./eviction-w-tinylfu.ts";
import { Evictor } from "./evictor.ts";
import { defaultLfuParams, type LfuParams, lfuInitial, lfuTouch } from "./lfu-counter.ts";
import { SlotIndex } from "./slot-index.ts";

/** `set(…, KEEP_TTL)`: keep the key's current expiry (SET … KEEPTTL, INCR). */
export const KEEP_TTL = -1;

/** Redis's maxmemory-samples default. */
export const DEFAULT_EVICTION_SAMPLES = 5;
/** Redis caps maxmemory-samples at 64: more samples cost more per eviction for little gain. */
export const MAX_EVICTION_SAMPLES = 64;
/** RANDOMKEY's random draws before it walks the table for a live key (Redis also retries on expired picks). */
const RANDOM_KEY_DRAWS = 100;

/** Why a key left the keyspace. */
export type RemovalCause = "deleted" | "expired" | "evicted";

/**
 * Told of every key that leaves, and of flushes (part 2: the replication stream, which must
 * carry expirations and evictions as deletions).
 */
export interface KeyspaceObserver {
  removed(key: string, cause: RemovalCause): void;
  flushed(): void;
}

export interface KeyspaceOptions {
  readonly clock: Clock;
  readonly random: RandomSource;
  readonly observer?: KeyspaceObserver;
  /** Bytes of accounted data allowed; 0 = no limit (Redis's default). */
  readonly maxmemoryBytes?: number;
  readonly policy?: EvictionPolicyName;
  readonly samples?: number;
  readonly lfu?: LfuParams;
}

export interface KeyspaceStats {
  readonly keys: number;
  readonly volatileKeys: number;
  readonly usedBytes: number;
  readonly hits: number;
  readonly misses: number;
  readonly expiredKeys: number;
  readonly evictedKeys: number;
}

export class Keyspace {
  readonly #clock: Clock;
  readonly #random: RandomSource;
  #map = new Map<string, CacheEntry>();
  readonly #all = new EntryBag("all");
  readonly #ttl = new EntryBag("ttl");
  readonly #evictor = new Evictor();
  readonly #observer: KeyspaceObserver | undefined;
  readonly #slotIndex: SlotIndex;
  /** Set only under allkeys-w-tinylfu with a maxmemory: then it, not the evictor, decides. */
  #wTinyLfu: WTinyLfuEviction | undefined;
  #maxmemoryBytes: number;
  #policy: EvictionPolicy;
  #samples: number;
  #lfu: LfuParams;
  #lfuMode: boolean;
  #usedBytes = 0;
  #hits = 0;
  #misses = 0;
  #expiredKeys = 0;
  #evictedKeys = 0;
  readonly #expiryTarget: ExpiryTarget;

  constructor(options: KeyspaceOptions) {
    this.#clock = options.clock;
    this.#random = options.random;
    this.#observer = options.observer;
    this.#slotIndex = new SlotIndex();
    this.#maxmemoryBytes = 0;
    this.#policy = evictionPolicy("noeviction");
    this.#lfuMode = false;
    this.#samples = DEFAULT_EVICTION_SAMPLES;
    this.#lfu = defaultLfuParams;
    this.configure(options);
    const ttl = this.#ttl;
    this.#expiryTarget = {
      get volatileCount() {
        return ttl.size;
      },
      sampleAndExpire: (nowMs) => this.#expireIfDue(ttl.pick(this.#random)!, nowMs),
    };
  }

  /** Changes the memory settings at runtime (CONFIG SET); validates every value first. */
  configure(options: Omit<Partial<KeyspaceOptions>, "clock" | "random">): void {
    const { maxmemoryBytes, policy, samples, lfu } = options;
    if (maxmemoryBytes !== undefined && !(Number.isSafeInteger(maxmemoryBytes) && maxmemoryBytes >= 0)) {
      throw new RangeError(`maxmemoryBytes must be an integer >= 0, got ${maxmemoryBytes}`);
    }
    if (
      samples !== undefined &&
      !(Number.isInteger(samples) && samples >= 1 && samples <= MAX_EVICTION_SAMPLES)
    ) {
      throw new RangeError(`samples must be an integer 1..${MAX_EVICTION_SAMPLES}, got ${samples}`);
    }
    if (lfu !== undefined && !(lfu.logFactor >= 0 && lfu.decayTimeMin >= 0)) {
      throw new RangeError("lfu logFactor and decayTimeMin must be >= 0");
    }
    if (maxmemoryBytes !== undefined) this.#maxmemoryBytes = maxmemoryBytes;
    if (samples !== undefined) this.#samples = samples;
    if (lfu !== undefined) this.#lfu = lfu;
    if (policy !== undefined) {
      this.#policy = evictionPolicy(policy);
      this.#lfuMode = this.#policy.rank === "lfu";
      this.#evictor.reset();
    }
    if (maxmemoryBytes !== undefined || policy !== undefined) this.#resetWTinyLfu();
    // A lowered maxmemory takes effect now, as in Redis (under noeviction, writes that grow are refused instead).
    const nowMs = this.#clock.nowMs();
    while (this.#maxmemoryBytes > 0 && this.#usedBytes > this.#maxmemoryBytes && this.#evictOne(nowMs)) {}
  }

  get maxmemoryBytes(): number {
    return this.#maxmemoryBytes;
  }

  get policy(): EvictionPolicyName {
    return this.#policy.name;
  }

  get samples(): number {
    return this.#samples;
  }

  get lfu(): LfuParams {
    return this.#lfu;
  }

  /** DBSIZE: keys in the table, expired ones not yet collected included (as in Redis). */
  get size(): number {
    return this.#map.size;
  }

  get usedBytes(): number {
    return this.#usedBytes;
  }

  /** Every key by hash slot (SCAN, KEYS); may still hold expired keys not yet collected. */
  get slotIndex(): SlotIndex {
    return this.#slotIndex;
  }

  get stats(): KeyspaceStats {
    return {
      keys: this.#map.size,
      volatileKeys: this.#ttl.size,
      usedBytes: this.#usedBytes,
      hits: this.#hits,
      misses: this.#misses,
      expiredKeys: this.#expiredKeys,
      evictedKeys: this.#evictedKeys,
    };
  }

  /** Zeroes hits, misses, expired and evicted counts (CONFIG RESETSTAT). */
  resetStats(): void {
    this.#hits = 0;
    this.#misses = 0;
    this.#expiredKeys = 0;
    this.#evictedKeys = 0;
  }

  /** A read that counts as a hit or miss and as an access for LRU/LFU (GET, MGET). */
  get(key: string): string | undefined {
    const nowMs = this.#clock.nowMs();
    const entry = this.#live(key, nowMs);
    if (entry === undefined) {
      this.#misses += 1;
      return undefined;
    }
    this.#hits += 1;
    this.#touch(entry, nowMs);
    this.#wTinyLfu?.read(key);
    return entry.value;
  }

  /** The live entry for `key` (expired ones are collected first), without counting an access. */
  lookup(key: string): CacheEntry | undefined {
    return this.#live(key, this.#clock.nowMs());
  }

  /**
   * Stores `value` with an absolute expiry (`NO_EXPIRY`, or `KEEP_TTL` to keep the key's own).
   * Returns false, changing nothing, when maxmemory cannot make room (the caller answers -OOM).
   */
  set(key: string, value: string, expiresAtMs: number): boolean {
    const nowMs = this.#clock.nowMs();
    const usedBefore = this.#usedBytes;
    let entry = this.#live(key, nowMs);
    if (this.#wTinyLfu !== undefined) {
      // Admission runs after the store; only a value that could never fit is refused up front.
      if (entryBytes(key, value) > this.#maxmemoryBytes) return false;
    } else if (this.#maxmemoryBytes > 0) {
      const growth = entry === undefined ? entryBytes(key, value) : value.length - entry.value.length;
      if (this.#usedBytes + growth > this.#maxmemoryBytes) {
        if (!this.#makeRoom([key], [value], nowMs)) return false;
        entry = this.#map.get(key);
      }
    }
    this.#store(key, value, expiresAtMs, entry, nowMs);
    this.#assertWithinMaxmemory(usedBefore);
    return true;
  }

  /** MSET: all pairs or none (false when maxmemory cannot make room for all of them). */
  setMany(keys: readonly string[], values: readonly string[]): boolean {
    const nowMs = this.#clock.nowMs();
    const usedBefore = this.#usedBytes;
    if (this.#wTinyLfu !== undefined) {
      if (keys.some((key, i) => entryBytes(key, values[i]!) > this.#maxmemoryBytes)) return false;
    } else if (this.#maxmemoryBytes > 0 && !this.#makeRoom(keys, values, nowMs)) return false;
    for (let i = 0; i < keys.length; i++) {
      this.#store(keys[i]!, values[i]!, NO_EXPIRY, this.#live(keys[i]!, nowMs), nowMs);
    }
    this.#assertWithinMaxmemory(usedBefore);
    return true;
  }

  /** Sets or clears (`NO_EXPIRY`) the expiry of a live entry. */
  setExpiry(entry: CacheEntry, expiresAtMs: number): void {
    if (entry.allSlot < 0) throw new Error(`setExpiry on an entry no longer in the keyspace: ${entry.key}`);
    if (expiresAtMs === NO_EXPIRY) {
      if (entry.ttlSlot >= 0) this.#ttl.remove(entry);
    } else if (entry.ttlSlot < 0) {
      this.#ttl.add(entry);
    }
    entry.expiresAtMs = expiresAtMs;
  }

  /** Deletes `key`; true when it existed (and was not expired). */
  delete(key: string): boolean {
    const entry = this.#live(key, this.#clock.nowMs());
    if (entry === undefined) return false;
    this.#remove(entry, "deleted");
    return true;
  }

  /** RANDOMKEY: a uniformly drawn live key, or undefined when the keyspace is empty. */
  randomKey(): string | undefined {
    const nowMs = this.#clock.nowMs();
    for (let draw = 0; draw < RANDOM_KEY_DRAWS && this.#all.size > 0; draw++) {
      const entry = this.#all.pick(this.#random)!;
      if (this.#live(entry.key, nowMs) !== undefined) return entry.key;
    }
    // Mostly expired keys: walk the table, collecting expired ones, rather than draw forever.
    for (const key of this.#map.keys()) if (this.#live(key, nowMs) !== undefined) return key;
    return undefined;
  }

  /** FLUSHALL / FLUSHDB. */
  flush(): void {
    this.#map = new Map();
    this.#all.clear();
    this.#ttl.clear();
    this.#evictor.reset();
    this.#usedBytes = 0;
    this.#slotIndex.clear();
    this.#wTinyLfu?.clear();
    this.#observer?.flushed();
  }

  /** Evicts one key under the policy; false when there is nothing to evict. */
  evictOne(): boolean {
    return this.#evictOne(this.#clock.nowMs());
  }

  /** One active expiry cycle within `budgetMs` (the server's timer calls this every 100 ms). */
  activeExpire(budgetMs: number): ActiveExpiryReport {
    return runActiveExpiry(this.#expiryTarget, { clock: this.#clock, budgetMs });
  }

  #live(key: string, nowMs: number): CacheEntry | undefined {
    const entry = this.#map.get(key);
    if (entry === undefined) return undefined;
    // Redis's keyIsExpired: expired strictly after the expiry instant.
    if (entry.expiresAtMs !== NO_EXPIRY && nowMs > entry.expiresAtMs) {
      this.#remove(entry, "expired");
      this.#expiredKeys += 1;
      return undefined;
    }
    return entry;
  }

  #expireIfDue(entry: CacheEntry, nowMs: number): boolean {
    if (nowMs <= entry.expiresAtMs) return false;
    this.#remove(entry, "expired");
    this.#expiredKeys += 1;
    return true;
  }

  #touch(entry: CacheEntry, nowMs: number): void {
    entry.access = this.#lfuMode ? lfuTouch(entry.access, nowMs, this.#lfu, this.#random) : lruClock(nowMs);
  }

  #store(key: string, value: string, expiresAtMs: number, found: CacheEntry | undefined, nowMs: number) {
    let entry = found;
    if (entry === undefined) {
      const access = this.#lfuMode ? lfuInitial(nowMs) : lruClock(nowMs);
      entry = { key, value, expiresAtMs: NO_EXPIRY, access, allSlot: -1, ttlSlot: -1 };
      this.#map.set(key, entry);
      this.#all.add(entry);
      this.#usedBytes += entryBytes(key, value);
      this.#slotIndex.add(key);
    } else {
      // An overwrite is an access (Redis's lookupKeyWrite touches), and LFU keeps the key's history.
      this.#usedBytes += value.length - entry.value.length;
      entry.value = value;
      this.#touch(entry, nowMs);
    }
    if (expiresAtMs !== KEEP_TTL) this.setExpiry(entry, expiresAtMs);
    // Last: admission may evict this very entry, after which nothing may touch it.
    if (this.#wTinyLfu !== undefined) this.#evictKeys(this.#wTinyLfu.written(key, entryBytes(key, value)));
  }

  /** Removes the keys W-TinyLFU evicted (it already dropped them itself). */
  #evictKeys(keys: readonly string[]): void {
    for (const key of keys) {
      const entry = this.#map.get(key);
      if (entry === undefined) continue;
      this.#remove(entry, "evicted");
      this.#evictedKeys += 1;
    }
  }

  /**
   * Starts W-TinyLFU afresh when the policy or maxmemory changes (CONFIG SET), replaying every
   * key oldest first; a lowered maxmemory evicts through admission here. The sketch's history
   * is lost: a rare event, and a cold sketch only means plain LRU-like behavior for a while.
   */
  #resetWTinyLfu(): void {
    this.#wTinyLfu = undefined;
    if (this.#policy.rank !== "w-tinylfu" || this.#maxmemoryBytes === 0) return;
    const policy = new WTinyLfuEviction({ maxmemoryBytes: this.#maxmemoryBytes, random: this.#random });
    const evicted: string[] = [];
    for (const entry of this.#map.values()) {
      evicted.push(...policy.written(entry.key, entryBytes(entry.key, entry.value)));
    }
    this.#wTinyLfu = policy;
    this.#evictKeys(evicted);
  }

  #remove(entry: CacheEntry, cause: RemovalCause): void {
    this.#map.delete(entry.key);
    this.#all.remove(entry);
    if (entry.ttlSlot >= 0) this.#ttl.remove(entry);
    this.#usedBytes -= entryBytes(entry.key, entry.value);
    this.#wTinyLfu?.removed(entry.key);
    this.#slotIndex.remove(entry.key);
    this.#observer?.removed(entry.key, cause);
  }

  /**
   * Evicts until the pairs fit. Bounded by the number of keys: each pass evicts one, or
   * gives up. An eviction may remove a key being overwritten, so the growth is recomputed.
   */
  #makeRoom(keys: readonly string[], values: readonly string[], nowMs: number): boolean {
    if (keys.length === 1) return this.#makeRoomFor(keys[0]!, values[0]!, nowMs);
    const finalValues = new Map<string, string>();
    let finalBytes = 0;
    // MSET k 1 k 2 stores only the last value: count each key once.
    for (let i = keys.length - 1; i >= 0; i--) {
      if (finalValues.has(keys[i]!)) continue;
      finalValues.set(keys[i]!, values[i]!);
      finalBytes += entryBytes(keys[i]!, values[i]!);
    }
    // Even an empty keyspace could not hold them: refuse before evicting everything for nothing.
    if (finalBytes > this.#maxmemoryBytes) return false;
    while (this.#usedBytes + this.#growth(finalValues, finalBytes) > this.#maxmemoryBytes) {
      if (!this.#evictOne(nowMs)) return false;
    }
    return true;
  }

  /** #makeRoom for one pair, without the bookkeeping duplicates need (the SET path under memory pressure). */
  #makeRoomFor(key: string, value: string, nowMs: number): boolean {
    const bytes = entryBytes(key, value);
    if (bytes > this.#maxmemoryBytes) return false;
    for (;;) {
      const old = this.#map.get(key);
      const growth = old === undefined ? bytes : bytes - entryBytes(old.key, old.value);
      if (this.#usedBytes + growth <= this.#maxmemoryBytes) return true;
      if (!this.#evictOne(nowMs)) return false;
    }
  }

  /** Bytes the keyspace grows by when `finalValues` (worth `finalBytes`) are written. */
  #growth(finalValues: ReadonlyMap<string, string>, finalBytes: number): number {
    let growth = finalBytes;
    for (const key of finalValues.keys()) {
      const old = this.#map.get(key);
      if (old !== undefined) growth -= entryBytes(old.key, old.value);
    }
    return growth;
  }

  #evictOne(nowMs: number): boolean {
    const victim = this.#evictor.pickVictim({ all: this.#all, ttl: this.#ttl }, this.#policy, {
      samples: this.#samples,
      nowMs,
      lfu: this.#lfu,
      random: this.#random,
    });
    if (victim === undefined) return false;
    this.#remove(victim, "evicted");
    this.#evictedKeys += 1;
    return true;
  }

  /** A write may leave usage above maxmemory only if it did not grow it (maxmemory was lowered under noeviction). */
  #assertWithinMaxmemory(usedBefore: number): void {
    const policy = this.#wTinyLfu;
    if (policy !== undefined && (policy.weight !== this.#usedBytes || policy.size !== this.#map.size)) {
      throw new Error(
        `keyspace invariant broken: W-TinyLFU holds ${policy.size} keys / ${policy.weight} B, the keyspace ${this.#map.size} / ${this.#usedBytes} B`,
      );
    }
    if (this.#maxmemoryBytes > 0 && this.#usedBytes > this.#maxmemoryBytes && this.#usedBytes > usedBefore) {
      throw new Error(
        `keyspace invariant broken: used ${this.#usedBytes} B > maxmemory ${this.#maxmemoryBytes} B`,
      );
    }
  }
}

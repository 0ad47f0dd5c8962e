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
import { int, type RandomSource } from "@casebook/kit/random";
import { type ActiveExpiryReport, type ExpiryTarget, runActiveExpiry } from "./active-expiry.ts";
import { type CacheEntry, entryBytes, NO_EXPIRY, recordBytes } from "./cache-entry.ts";
import { lruClock } from "./eviction-lru.ts";
import { type EvictionPolicy, type EvictionPolicyName, evictionPolicy } from "./eviction-policy.ts";
import { WTinyLfuEviction } from "./eviction-w-tinylfu.ts";
import { Evictor } from "./evictor.ts";
import { KeyRecords } from "./key-records.ts";
import { defaultLfuParams, type LfuParams, lfuInitial, lfuTouch } from "./lfu-counter.ts";
import { SlotIndex } from "./slot-index.ts";
import { slotBytes } from "./value-arena.ts";

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

/**
 * A live entry as `lookup` returns it: the value copied out of the arena only when read. A class
 * with the getter on its prototype, not an object literal with `get value()`: V8 gives a literal's
 * getter an accessor pair in the old generation, and that pair held each lookup's entry and its
 * closure through every scavenge (redis-benchmark INCR, which looks up every key: ~2.5 MB
 * promoted per scavenge).
 */
class LiveEntry implements CacheEntry {
  readonly key: string;
  readonly expiresAtMs: number;
  readonly access: number;
  readonly #records: KeyRecords;

  constructor(records: KeyRecords, key: string, id: number) {
    this.key = key;
    this.expiresAtMs = records.expiresAtOf(id);
    this.access = records.accessOf(id);
    this.#records = records;
  }

  get value(): string {
    const now = this.#records.idOf(this.key);
    if (now < 0) throw new Error(`the value of ${this.key} was read after the key left the keyspace`);
    return this.#records.value(now);
  }
}

export class Keyspace {
  readonly #clock: Clock;
  readonly #random: RandomSource;
  readonly #records: KeyRecords;
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
  #peakUsedBytes = 0;
  #hits = 0;
  #misses = 0;
  #expiredKeys = 0;
  #evictedKeys = 0;
  readonly #expiryTarget: ExpiryTarget;

  constructor(options: KeyspaceOptions) {
    this.#clock = options.clock;
    this.#random = options.random;
    this.#observer = options.observer;
    // The key hash's seed (key-table.ts): drawn once, so colliding keys cannot be chosen in advance.
    this.#records = new KeyRecords(int(options.random, 0x7fffffff));
    this.#slotIndex = new SlotIndex(this.#records);
    this.#maxmemoryBytes = 0;
    this.#policy = evictionPolicy("noeviction");
    this.#lfuMode = false;
    this.#samples = DEFAULT_EVICTION_SAMPLES;
    this.#lfu = defaultLfuParams;
    this.configure(options);
    const records = this.#records;
    this.#expiryTarget = {
      get volatileCount() {
        return records.count("ttl");
      },
      sampleAndExpire: (nowMs) => this.#expireIfDue(records.sample("ttl", this.#random), nowMs),
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
    return this.#records.size;
  }

  /** Bytes the records really hold beyond the V8 heap: value arena chunks and field arrays (MEMORY STATS). */
  get recordBytes(): { arenaBytes: number; fieldBytes: number } {
    return { arenaBytes: this.#records.arenaBytes, fieldBytes: this.#records.fieldBytes };
  }

  get usedBytes(): number {
    return this.#usedBytes;
  }

  /** The highest `usedBytes` ever reached (INFO's used_memory_peak), kept exact on every write. */
  get peakUsedBytes(): number {
    return this.#peakUsedBytes;
  }

  /** Every key by hash slot (SCAN, KEYS); may still hold expired keys not yet collected. */
  get slotIndex(): SlotIndex {
    return this.#slotIndex;
  }

  get stats(): KeyspaceStats {
    return {
      keys: this.#records.size,
      volatileKeys: this.#records.count("ttl"),
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
    const id = this.#live(key, nowMs);
    if (id < 0) {
      this.#misses += 1;
      return undefined;
    }
    this.#hits += 1;
    this.#touch(id, nowMs);
    this.#wTinyLfu?.read(key);
    return this.#records.value(id);
  }

  /**
   * The live entry for `key` (expired ones are collected first), without counting an access:
   * a view read now, whose `value` is copied out of the arena only when read.
   */
  lookup(key: string): CacheEntry | undefined {
    const id = this.#live(key, this.#clock.nowMs());
    if (id < 0) return undefined;
    return new LiveEntry(this.#records, key, id);
  }

  /**
   * Stores `value` with an absolute expiry (`NO_EXPIRY`, or `KEEP_TTL` to keep the key's own).
   * Returns false, changing nothing, when maxmemory cannot make room (the caller answers -OOM).
   */
  set(key: string, value: string, expiresAtMs: number): boolean {
    const nowMs = this.#clock.nowMs();
    const usedBefore = this.#usedBytes;
    let id = this.#live(key, nowMs);
    if (this.#wTinyLfu !== undefined) {
      // Admission runs after the store; only a value that could never fit is refused up front.
      if (entryBytes(key, value) > this.#maxmemoryBytes) return false;
    } else if (this.#maxmemoryBytes > 0) {
      const growth =
        id < 0 ? entryBytes(key, value) : slotBytes(value.length) - slotBytes(this.#records.valueLength(id));
      if (this.#usedBytes + growth > this.#maxmemoryBytes) {
        if (!this.#makeRoom([key], [value], nowMs)) return false;
        id = this.#records.idOf(key);
      }
    }
    this.#store(key, value, expiresAtMs, id, nowMs);
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
    const id = this.#records.idOf(entry.key);
    if (id < 0) throw new Error(`setExpiry on an entry no longer in the keyspace: ${entry.key}`);
    this.#records.setExpiresAt(id, expiresAtMs);
  }

  /** Deletes `key`; true when it existed (and was not expired). */
  delete(key: string): boolean {
    const id = this.#live(key, this.#clock.nowMs());
    if (id < 0) return false;
    this.#remove(id, "deleted");
    return true;
  }

  /** RANDOMKEY: a uniformly drawn live key, or undefined when the keyspace is empty. */
  randomKey(): string | undefined {
    const nowMs = this.#clock.nowMs();
    const records = this.#records;
    for (let draw = 0; draw < RANDOM_KEY_DRAWS && records.size > 0; draw++) {
      const key = records.keyOf(records.sample("all", this.#random));
      if (this.#live(key, nowMs) >= 0) return key;
    }
    // Mostly expired keys: walk the table, collecting expired ones, rather than draw forever.
    for (const key of [...records.keys()]) if (this.#live(key, nowMs) >= 0) return key;
    return undefined;
  }

  /** FLUSHALL / FLUSHDB. */
  flush(): void {
    this.#records.clear();
    this.#evictor.reset();
    this.#usedBytes = 0;
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

  /** The record id of `key` if it is live (an expired one is collected first), else −1. */
  #live(key: string, nowMs: number): number {
    const id = this.#records.idOf(key);
    if (id < 0) return -1;
    // Redis's keyIsExpired: expired strictly after the expiry instant.
    const expiresAtMs = this.#records.expiresAtOf(id);
    if (expiresAtMs !== NO_EXPIRY && nowMs > expiresAtMs) {
      this.#remove(id, "expired");
      this.#expiredKeys += 1;
      return -1;
    }
    return id;
  }

  #expireIfDue(id: number, nowMs: number): boolean {
    if (nowMs <= this.#records.expiresAtOf(id)) return false;
    this.#remove(id, "expired");
    this.#expiredKeys += 1;
    return true;
  }

  #touch(id: number, nowMs: number): void {
    const records = this.#records;
    records.setAccess(
      id,
      this.#lfuMode ? lfuTouch(records.accessOf(id), nowMs, this.#lfu, this.#random) : lruClock(nowMs),
    );
  }

  #store(key: string, value: string, expiresAtMs: number, found: number, nowMs: number) {
    let id = found;
    if (id < 0) {
      id = this.#records.add(key, value, this.#lfuMode ? lfuInitial(nowMs) : lruClock(nowMs));
      this.#usedBytes += entryBytes(key, value);
    } else {
      // An overwrite is an access (Redis's lookupKeyWrite touches), and LFU keeps the key's history.
      this.#usedBytes += slotBytes(value.length) - slotBytes(this.#records.valueLength(id));
      this.#records.setValue(id, value);
      this.#touch(id, nowMs);
    }
    if (this.#usedBytes > this.#peakUsedBytes) this.#peakUsedBytes = this.#usedBytes;
    if (expiresAtMs !== KEEP_TTL) this.#records.setExpiresAt(id, expiresAtMs);
    // Last: admission may evict this very entry, after which nothing may touch it.
    if (this.#wTinyLfu !== undefined) this.#evictKeys(this.#wTinyLfu.written(key, entryBytes(key, value)));
  }

  /** Removes the keys W-TinyLFU evicted (it already dropped them itself). */
  #evictKeys(keys: readonly string[]): void {
    for (const key of keys) {
      const id = this.#records.idOf(key);
      if (id < 0) continue;
      this.#remove(id, "evicted");
      this.#evictedKeys += 1;
    }
  }

  /**
   * Starts W-TinyLFU afresh when the policy or maxmemory changes (CONFIG SET), replaying every
   * key in record order (the records do not keep insertion order); a lowered maxmemory evicts
   * through admission here. The sketch's history is lost: a rare event, and a cold sketch only means plain LRU-like behavior for a while.
   */
  #resetWTinyLfu(): void {
    this.#wTinyLfu = undefined;
    if (this.#policy.rank !== "w-tinylfu" || this.#maxmemoryBytes === 0) return;
    const policy = new WTinyLfuEviction({ maxmemoryBytes: this.#maxmemoryBytes, random: this.#random });
    const evicted: string[] = [];
    const records = this.#records;
    for (let id = 0; id < records.size; id++) {
      evicted.push(
        ...policy.written(records.keyOf(id), recordBytes(records.keyLength(id), records.valueLength(id))),
      );
    }
    this.#wTinyLfu = policy;
    this.#evictKeys(evicted);
  }

  #remove(id: number, cause: RemovalCause): void {
    const records = this.#records;
    this.#usedBytes -= recordBytes(records.keyLength(id), records.valueLength(id));
    // Decoded only for who must hear of it: the key's bytes are gone once the record is.
    const key = this.#observer !== undefined || this.#wTinyLfu !== undefined ? records.keyOf(id) : "";
    records.remove(id);
    this.#wTinyLfu?.removed(key);
    this.#observer?.removed(key, cause);
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
      const old = this.#records.idOf(key);
      const growth = old < 0 ? bytes : bytes - recordBytes(key.length, this.#records.valueLength(old));
      if (this.#usedBytes + growth <= this.#maxmemoryBytes) return true;
      if (!this.#evictOne(nowMs)) return false;
    }
  }

  /** Bytes the keyspace grows by when `finalValues` (worth `finalBytes`) are written. */
  #growth(finalValues: ReadonlyMap<string, string>, finalBytes: number): number {
    let growth = finalBytes;
    for (const key of finalValues.keys()) {
      const old = this.#records.idOf(key);
      if (old >= 0) growth -= recordBytes(key.length, this.#records.valueLength(old));
    }
    return growth;
  }

  #evictOne(nowMs: number): boolean {
    const victim = this.#evictor.pickVictim(this.#records, this.#policy, {
      samples: this.#samples,
      nowMs,
      lfu: this.#lfu,
      random: this.#random,
    });
    if (victim === undefined) return false;
    this.#remove(this.#records.idOf(victim), "evicted");
    this.#evictedKeys += 1;
    return true;
  }

  /** A write may leave usage above maxmemory only if it did not grow it (maxmemory was lowered under noeviction). */
  #assertWithinMaxmemory(usedBefore: number): void {
    const policy = this.#wTinyLfu;
    if (policy !== undefined && (policy.weight !== this.#usedBytes || policy.size !== this.#records.size)) {
      throw new Error(
        `keyspace invariant broken: W-TinyLFU holds ${policy.size} keys / ${policy.weight} B, the keyspace ${this.#records.size} / ${this.#usedBytes} B`,
      );
    }
    if (this.#maxmemoryBytes > 0 && this.#usedBytes > this.#maxmemoryBytes && this.#usedBytes > usedBefore) {
      throw new Error(
        `keyspace invariant broken: used ${this.#usedBytes} B > maxmemory ${this.#maxmemoryBytes} B`,
      );
    }
  }
}

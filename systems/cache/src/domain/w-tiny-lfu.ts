/**
 * W-TinyLFU, Caffeine's eviction policy (Einziger, Friedman & Manes): a small admission
 * window in front of a large main space, and a frequency sketch that decides who may
 * enter the main space.
 *
 * - **Window** (1% by default): an LRU every new key enters. It lets a burst of new keys
 *   build up frequency before it must compete, so recency-heavy traffic is not starved.
 * - **Main**, a segmented LRU: **probation** (20% of main) holds keys seen once in main;
 *   a hit there promotes the key to **protected** (80%), whose overflow is demoted back
 *   to probation. Keys hit twice outlive scans of keys touched once.
 * - **TinyLFU admission**: when the window overflows and the cache is full, its oldest key
 *   (the candidate) competes with probation's oldest (the victim); the one with the
 *   higher sketch frequency stays. A one-hit wonder cannot push out a popular key, which
 *   is what makes the policy scan-resistant, and the sketch remembers keys that are not
 *   cached, which an LRU cannot.
 *
 * Every operation is O(1) (three intrusive lists and one map; the sketch is a fixed
 * number of array reads). The cache bounds entries AND, optionally, total weight (bytes),
 * and reports each eviction once through `onEvict`, after its state is consistent again.
 * It holds keys and weights only: the server keeps the values and deletes a key's value
 * when told it was evicted.
 *
 * The frequency is recorded like Caffeine does: on a hit and on every write, not on a
 * miss, so a cache-aside miss (get, then set) counts once.
 *
 * @example
 * const cache = new WTinyLfu<string>({
 *   maxEntries: 10_000, maxWeight: 64 * 2 ** 20, random: seededRandom("node-1"),
 *   onEvict: (key) => values.delete(key),
 * });
 * cache.set("event:42", 1_024); // true: resident
 * cache.get("event:42");        // true: a hit, recorded in the sketch
 */
import type { RandomSource } from "@casebook/kit/random";
import { requireNumber, requireWeight } from "../errors.ts";
import {
  type CacheBounds,
  type CacheBoundsOptions,
  type EvictionListener,
  exceeds,
  notifyEvicted,
  resolveBounds,
} from "./cache-bounds.ts";
import { CountMinSketch } from "./count-min-sketch.ts";
import { hashKey as defaultHashKey } from "./key-hash.ts";
import { type Linked, LinkedDeque } from "./linked-deque.ts";

export interface WTinyLfuOptions<K> extends CacheBoundsOptions {
  /** Share of the capacity given to the admission window (Caffeine starts at 1%). */
  readonly windowFraction?: number;
  /** Share of the main space given to the protected segment (80%). */
  readonly protectedFraction?: number;
  /** For the hash-flooding guard in admission; inject a seeded one in tests. */
  readonly random: RandomSource;
  readonly onEvict?: EvictionListener<K>;
  /** A 32-bit hash of a key; murmur3/fmix32 by default (see key-hash.ts). */
  readonly hashKey?: (key: K) => number;
  /** Put TinyLFU's doorkeeper Bloom filter in front of the sketch's counters. */
  readonly doorkeeper?: boolean;
  /** Size the sketch for this many entries (default maxEntries): set it when weight is the real bound. */
  readonly sketchEntries?: number;
}

/** Where an entry lives; plain numbers because enums are not erasable syntax. */
const WINDOW = 0;
const PROBATION = 1;
const PROTECTED = 2;
type Region = typeof WINDOW | typeof PROBATION | typeof PROTECTED;

/**
 * Caffeine's guard against hash flooding: an attacker who makes the victim's counters look
 * hot could pin it forever. A candidate that is warm itself (>= 6) but loses the duel still
 * gets in with probability 1/128, so no victim is safe forever.
 */
const HASH_FLOOD_WARM_FREQUENCY = 6;
const HASH_FLOOD_ADMIT_ODDS = 128;

interface Entry<K> extends Linked {
  readonly key: K;
  readonly hash: number;
  weight: number;
  region: Region;
}

interface Budget {
  readonly entries: number;
  readonly weight: number;
}

export interface RegionSizes {
  readonly window: number;
  readonly probation: number;
  readonly protected: number;
}

export class WTinyLfu<K> {
  readonly #bounds: CacheBounds;
  readonly #windowBudget: Budget;
  readonly #protectedBudget: Budget;
  readonly #map = new Map<K, Entry<K>>();
  readonly #lists: readonly [LinkedDeque<Entry<K>>, LinkedDeque<Entry<K>>, LinkedDeque<Entry<K>>] = [
    new LinkedDeque(),
    new LinkedDeque(),
    new LinkedDeque(),
  ];
  readonly #regionWeight: [number, number, number] = [0, 0, 0];
  readonly #sketch: CountMinSketch;
  readonly #random: RandomSource;
  readonly #onEvict: EvictionListener<K> | undefined;
  readonly #hashKey: (key: K) => number;
  #weight = 0;

  constructor(options: WTinyLfuOptions<K>) {
    this.#bounds = resolveBounds(options);
    const windowFraction = options.windowFraction ?? 0.01;
    const protectedFraction = options.protectedFraction ?? 0.8;
    requireNumber("windowFraction", windowFraction, 0, 1);
    requireNumber("protectedFraction", protectedFraction, 0, 1);
    const { maxEntries, maxWeight } = this.#bounds;
    this.#windowBudget = {
      entries: Math.max(1, Math.floor(maxEntries * windowFraction)),
      weight: maxWeight * windowFraction,
    };
    const mainEntries = maxEntries - this.#windowBudget.entries;
    const mainWeight = Number.isFinite(maxWeight) ? maxWeight - this.#windowBudget.weight : Infinity;
    this.#protectedBudget = {
      entries: Math.floor(mainEntries * protectedFraction),
      weight: mainWeight * protectedFraction,
    };
    this.#sketch = CountMinSketch.forCapacity(options.sketchEntries ?? maxEntries, {
      doorkeeper: options.doorkeeper ?? false,
    });
    this.#random = options.random;
    this.#onEvict = options.onEvict;
    this.#hashKey = options.hashKey ?? (defaultHashKey as (key: K) => number);
  }

  /** Entries held. */
  get size(): number {
    return this.#map.size;
  }

  /** Total weight held. */
  get weight(): number {
    return this.#weight;
  }

  get bounds(): CacheBounds {
    return this.#bounds;
  }

  /** True when the key is resident; records nothing (unlike `get`). */
  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** The key's weight, or undefined when absent; records nothing. */
  weightOf(key: K): number | undefined {
    return this.#map.get(key)?.weight;
  }

  /** The sketch's estimate of how often the key was hit or written recently. */
  frequency(key: K): number {
    return this.#sketch.frequency(this.#hashKey(key));
  }

  /** A read: true on a hit, which counts as an access (frequency and recency); a miss records nothing. */
  get(key: K): boolean {
    const entry = this.#map.get(key);
    if (entry === undefined) return false;
    this.#sketch.increment(entry.hash);
    this.#onHit(entry);
    this.#demoteProtectedOverflow();
    return true;
  }

  /**
   * A write of `weight` (1 when counting entries): inserts into the window or updates and
   * touches the entry, then evicts to the bounds. Resolves whether the key is resident after
   * the call: false when admission rejected it, or when it is heavier than the whole cache.
   */
  set(key: K, weight = 1): boolean {
    requireWeight(key, weight);
    let entry = this.#map.get(key);
    if (entry === undefined) {
      entry = { key, hash: this.#hashKey(key), weight, region: WINDOW, prev: null, next: null, list: null };
      this.#map.set(key, entry);
      this.#link(entry, WINDOW);
      this.#weight += weight;
    } else {
      this.#regionWeight[entry.region] += weight - entry.weight;
      this.#weight += weight - entry.weight;
      entry.weight = weight;
      this.#onHit(entry);
    }
    this.#sketch.increment(entry.hash);
    const evicted: Entry<K>[] = [];
    // An entry heavier than the whole cache can never stay; Caffeine evicts it at once too.
    if (weight > this.#bounds.maxWeight) this.#evict(entry, evicted);
    this.#maintain(evicted);
    notifyEvicted(evicted, this.#onEvict);
    return entry.list !== null;
  }

  /** An explicit removal (DEL, expiry): true when the key was resident; `onEvict` is not called. */
  delete(key: K): boolean {
    const entry = this.#map.get(key);
    if (entry === undefined) return false;
    this.#unlink(entry);
    this.#map.delete(key);
    this.#weight -= entry.weight;
    return true;
  }

  /** Empties the cache (FLUSHALL) without calling `onEvict`; the sketch keeps its history. */
  clear(): void {
    for (const list of this.#lists) list.clear();
    this.#regionWeight.fill(0);
    this.#map.clear();
    this.#weight = 0;
  }

  /** Resident keys: window, then probation, then protected, each oldest first. */
  *keys(): IterableIterator<K> {
    for (const list of this.#lists) for (const entry of list) yield entry.key;
  }

  /** Entries per region, for tests and metrics. */
  regionSizes(): RegionSizes {
    const [window, probation, protectedList] = this.#lists;
    return { window: window.length, probation: probation.length, protected: protectedList.length };
  }

  #onHit(entry: Entry<K>): void {
    if (entry.region === PROBATION) {
      // A second touch while in main: the key has earned protection from the next scan.
      this.#unlink(entry);
      this.#link(entry, PROTECTED);
    } else {
      this.#lists[entry.region].moveToBack(entry);
    }
  }

  #maintain(evicted: Entry<K>[]): void {
    this.#demoteProtectedOverflow();
    this.#drainWindow(evicted);
    // The window may be within budget while the total is not (an entry grew): trim main, then window.
    for (
      let guard = this.#map.size;
      exceeds(this.#bounds, this.#map.size, this.#weight) && guard > 0;
      guard--
    ) {
      const victim = this.#lists[PROBATION].head ?? this.#lists[PROTECTED].head ?? this.#lists[WINDOW].head;
      if (victim === null) break;
      this.#evict(victim, evicted);
    }
    if (exceeds(this.#bounds, this.#map.size, this.#weight)) {
      throw new Error(`invariant: ${this.#map.size} entries / ${this.#weight} weight exceed the bounds`);
    }
  }

  /** Moves the window's overflow, oldest first, into probation or out, each through admission. */
  #drainWindow(evicted: Entry<K>[]): void {
    const window = this.#lists[WINDOW];
    // Each pass takes one entry out of the window: bounded by the window's length.
    for (let guard = window.length; guard > 0 && this.#overBudget(WINDOW, this.#windowBudget); guard--) {
      const candidate = window.head;
      if (candidate === null) return;
      this.#unlink(candidate);
      if (exceeds(this.#bounds, this.#map.size, this.#weight)) this.#duel(candidate, evicted);
      else this.#link(candidate, PROBATION);
    }
  }

  /**
   * The full cache's admission: the candidate meets probation's oldest (then protected's, if
   * probation is empty) until the cache fits or the candidate loses. With weights one heavy
   * candidate may have to beat several victims, each duel evicting the loser.
   */
  #duel(candidate: Entry<K>, evicted: Entry<K>[]): void {
    const candidateFrequency = this.#sketch.frequency(candidate.hash);
    // Each duel evicts one entry: bounded by the number of entries.
    for (
      let guard = this.#map.size;
      guard > 0 && exceeds(this.#bounds, this.#map.size, this.#weight);
      guard--
    ) {
      const victim = this.#lists[PROBATION].head ?? this.#lists[PROTECTED].head;
      if (victim === null || !this.#admit(candidateFrequency, victim)) {
        this.#evict(candidate, evicted);
        return;
      }
      this.#evict(victim, evicted);
    }
    this.#link(candidate, PROBATION);
  }

  #admit(candidateFrequency: number, victim: Entry<K>): boolean {
    const victimFrequency = this.#sketch.frequency(victim.hash);
    if (candidateFrequency > victimFrequency) return true;
    // Ties go to the victim: it already proved itself in main, the candidate only in the window.
    if (candidateFrequency < HASH_FLOOD_WARM_FREQUENCY) return false;
    return Math.floor(this.#random.next() * HASH_FLOOD_ADMIT_ODDS) === 0;
  }

  #demoteProtectedOverflow(): void {
    const protectedList = this.#lists[PROTECTED];
    for (
      let guard = protectedList.length;
      guard > 0 && this.#overBudget(PROTECTED, this.#protectedBudget);
      guard--
    ) {
      const demoted = protectedList.head;
      if (demoted === null) return;
      this.#unlink(demoted);
      this.#link(demoted, PROBATION);
    }
  }

  #overBudget(region: Region, budget: Budget): boolean {
    return this.#lists[region].length > budget.entries || this.#regionWeight[region] > budget.weight;
  }

  #link(entry: Entry<K>, region: Region): void {
    entry.region = region;
    this.#lists[region].pushBack(entry);
    this.#regionWeight[region] += entry.weight;
  }

  /** Takes the entry out of its list (a candidate in a duel is in none); it stays in the map. */
  #unlink(entry: Entry<K>): void {
    if (entry.list === null) return;
    this.#lists[entry.region].remove(entry);
    this.#regionWeight[entry.region] -= entry.weight;
  }

  #evict(entry: Entry<K>, evicted: Entry<K>[]): void {
    this.#unlink(entry);
    this.#map.delete(entry.key);
    this.#weight -= entry.weight;
    evicted.push(entry);
  }
}

/**
 * Exact LRU: every hit moves the key to the back of one list; the front is evicted. The
 * baseline every other policy is measured against (CA-24), and the policy Redis's
 * sampled eviction approximates. Bounded by entries and, optionally, weight.
 *
 * @example
 * const lru = new LruCache<string>({ maxEntries: 2, onEvict: (key) => console.log("evicted", key) });
 * lru.set("a"); lru.set("b"); lru.get("a");
 * lru.set("c"); // evicts "b", the least recently used
 */

import { requireWeight } from "../errors.ts";
import {
  type CacheBounds,
  type CacheBoundsOptions,
  type EvictionListener,
  exceeds,
  notifyEvicted,
  resolveBounds,
} from "./cache-bounds.ts";
import { type Linked, LinkedDeque } from "./linked-deque.ts";

export interface LruCacheOptions<K> extends CacheBoundsOptions {
  readonly onEvict?: EvictionListener<K>;
}

interface Entry<K> extends Linked {
  readonly key: K;
  weight: number;
}

export class LruCache<K> {
  readonly #bounds: CacheBounds;
  readonly #map = new Map<K, Entry<K>>();
  readonly #order = new LinkedDeque<Entry<K>>();
  readonly #onEvict: EvictionListener<K> | undefined;
  #weight = 0;

  constructor(options: LruCacheOptions<K>) {
    this.#bounds = resolveBounds(options);
    this.#onEvict = options.onEvict;
  }

  get size(): number {
    return this.#map.size;
  }

  get weight(): number {
    return this.#weight;
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** True on a hit, which makes the key the most recently used. */
  get(key: K): boolean {
    const entry = this.#map.get(key);
    if (entry === undefined) return false;
    this.#order.moveToBack(entry);
    return true;
  }

  /** Inserts or updates the key as most recently used; true when it is resident after the call. */
  set(key: K, weight = 1): boolean {
    requireWeight(key, weight);
    let entry = this.#map.get(key);
    if (entry === undefined) {
      entry = { key, weight, prev: null, next: null, list: null };
      this.#map.set(key, entry);
      this.#order.pushBack(entry);
      this.#weight += weight;
    } else {
      this.#weight += weight - entry.weight;
      entry.weight = weight;
      this.#order.moveToBack(entry);
    }
    const evicted: Entry<K>[] = [];
    // Each pass evicts one entry: bounded by the entries held.
    for (
      let guard = this.#map.size;
      guard > 0 && exceeds(this.#bounds, this.#map.size, this.#weight);
      guard--
    ) {
      const victim = this.#order.shift();
      if (victim === null) break;
      this.#map.delete(victim.key);
      this.#weight -= victim.weight;
      evicted.push(victim);
    }
    notifyEvicted(evicted, this.#onEvict);
    return this.#map.has(key);
  }

  /** An explicit removal; `onEvict` is not called. */
  delete(key: K): boolean {
    const entry = this.#map.get(key);
    if (entry === undefined) return false;
    this.#order.remove(entry);
    this.#map.delete(key);
    this.#weight -= entry.weight;
    return true;
  }
}

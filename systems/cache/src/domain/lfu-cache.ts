/**
 * Exact LFU with dynamic aging (LFU-DA, Arlitt et al., as in Squid): each key's priority is
 * its hit count plus the cache's "age" L, and L becomes the priority of every evicted key.
 * Plain LFU keeps yesterday's hot keys forever (their counts never fall); with aging a new
 * key starts at L + 1, level with what was just evicted, so stale heavy hitters are
 * eventually overtaken. Ties go to the least recently touched key. O(log n) per operation
 * through an indexed heap: a reference policy for the study, not for the server.
 *
 * @example
 * const lfu = new LfuCache<string>({ maxEntries: 2 });
 * lfu.set("a"); lfu.get("a"); lfu.set("b");
 * lfu.set("c"); // evicts "b" (count 1) and keeps "a" (count 2)
 */

import { type HeapNode, IndexedHeap } from "@casebook/kit/indexed-heap";
import { requireWeight } from "../errors.ts";
import {
  type CacheBounds,
  type CacheBoundsOptions,
  type EvictionListener,
  exceeds,
  notifyEvicted,
  resolveBounds,
} from "./cache-bounds.ts";

export interface LfuCacheOptions<K> extends CacheBoundsOptions {
  readonly onEvict?: EvictionListener<K>;
}

interface Entry<K> extends HeapNode {
  readonly key: K;
  weight: number;
  count: number;
  priority: number;
  /** Logical time of the last touch: the tie-breaker (older goes first). */
  touched: number;
}

export class LfuCache<K> {
  readonly #bounds: CacheBounds;
  readonly #map = new Map<K, Entry<K>>();
  readonly #heap = new IndexedHeap<Entry<K>>(
    (a, b) => a.priority < b.priority || (a.priority === b.priority && a.touched < b.touched),
  );
  readonly #onEvict: EvictionListener<K> | undefined;
  #weight = 0;
  /** LFU-DA's L: the priority of the last evicted key. */
  #age = 0;
  #tick = 0;

  constructor(options: LfuCacheOptions<K>) {
    this.#bounds = resolveBounds(options);
    this.#onEvict = options.onEvict;
  }

  get size(): number {
    return this.#map.size;
  }

  /** The current age L (grows as keys are evicted). */
  get age(): number {
    return this.#age;
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** True on a hit, which adds one to the key's count. */
  get(key: K): boolean {
    const entry = this.#map.get(key);
    if (entry === undefined) return false;
    this.#touch(entry);
    return true;
  }

  /**
   * Inserts the key at priority L + 1 (after making room, so a new key is never its own
   * victim) or counts a write to a resident key; true when resident after the call.
   */
  set(key: K, weight = 1): boolean {
    requireWeight(key, weight);
    const evicted: Entry<K>[] = [];
    const existing = this.#map.get(key);
    if (existing !== undefined) {
      this.#weight += weight - existing.weight;
      existing.weight = weight;
      this.#touch(existing);
    } else {
      this.#evictWhile(() => exceeds(this.#bounds, this.#map.size + 1, this.#weight + weight), evicted);
      const entry: Entry<K> = {
        key,
        weight,
        count: 1,
        priority: this.#age + 1,
        touched: ++this.#tick,
        heapIndex: -1,
      };
      this.#map.set(key, entry);
      this.#heap.push(entry);
      this.#weight += weight;
    }
    this.#evictWhile(() => exceeds(this.#bounds, this.#map.size, this.#weight), evicted);
    notifyEvicted(evicted, this.#onEvict);
    return this.#map.has(key);
  }

  /** An explicit removal; `onEvict` is not called and the age does not move. */
  delete(key: K): boolean {
    const entry = this.#map.get(key);
    if (entry === undefined) return false;
    this.#heap.remove(entry);
    this.#map.delete(key);
    this.#weight -= entry.weight;
    return true;
  }

  #touch(entry: Entry<K>): void {
    entry.count++;
    entry.priority = this.#age + entry.count;
    entry.touched = ++this.#tick;
    this.#heap.update(entry);
  }

  #evictWhile(over: () => boolean, evicted: Entry<K>[]): void {
    // Each pass evicts one entry: bounded by the entries held.
    for (let guard = this.#map.size; guard > 0 && over(); guard--) {
      const victim = this.#heap.pop();
      if (victim === undefined) return;
      this.#age = victim.priority;
      this.#map.delete(victim.key);
      this.#weight -= victim.weight;
      evicted.push(victim);
    }
  }
}

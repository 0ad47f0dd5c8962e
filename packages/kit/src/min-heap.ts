/**
 * A binary min-heap of values by a numeric key: O(log n) push and pop, O(1) peek. Keys
 * and values sit in two parallel arrays, so a push allocates no entry object: the fair
 * scheduler parks every rate-limited queue in one, the in-process keyspace keeps its
 * expiry deadlines in one. Equal keys come out in no particular order.
 *
 * Entries are never updated in place. A caller whose key changes pushes again and drops
 * the stale entry when it pops (check it against the value's current key); `retain`
 * rebuilds the heap in O(n) from the live entries when stale ones pile up. For a heap
 * whose nodes move in place, see `indexed-heap.ts`.
 *
 * @example
 * const heap = new MinHeap<string>();
 * heap.push(30, "c"); heap.push(10, "a");
 * heap.peekKey(); // 10
 * heap.pop();     // { key: 10, value: "a" }
 */
import { assert } from "./assert.ts";

export interface HeapEntry<T> {
  readonly key: number;
  readonly value: T;
}

export class MinHeap<T> {
  #keys: number[] = [];
  #values: T[] = [];

  get size(): number {
    return this.#keys.length;
  }

  /** Adds `value` under `key`; a NaN key would break the order for every other entry. */
  push(key: number, value: T): void {
    assert(!Number.isNaN(key), "a heap key is a number, not NaN");
    this.#keys.push(key);
    this.#values.push(value);
    this.#up(this.#keys.length - 1);
  }

  /** The smallest key, or undefined when empty. */
  peekKey(): number | undefined {
    return this.#keys[0];
  }

  /** The value with the smallest key, or undefined when empty. */
  peekValue(): T | undefined {
    return this.#keys.length === 0 ? undefined : this.#values[0];
  }

  /** Removes and returns the entry with the smallest key, or undefined when empty. */
  pop(): HeapEntry<T> | undefined {
    if (this.#keys.length === 0) return undefined;
    const top = { key: this.#keys[0]!, value: this.#values[0]! };
    const lastKey = this.#keys.pop()!;
    const lastValue = this.#values.pop()!;
    if (this.#keys.length > 0) {
      this.#keys[0] = lastKey;
      this.#values[0] = lastValue;
      this.#down(0);
    }
    return top;
  }

  /** Keeps only the entries `keep` accepts and restores the heap order: O(n), Floyd's build. */
  retain(keep: (key: number, value: T) => boolean): void {
    const keys: number[] = [];
    const values: T[] = [];
    for (let i = 0; i < this.#keys.length; i++) {
      if (!keep(this.#keys[i]!, this.#values[i]!)) continue;
      keys.push(this.#keys[i]!);
      values.push(this.#values[i]!);
    }
    this.#keys = keys;
    this.#values = values;
    for (let i = (keys.length >> 1) - 1; i >= 0; i--) this.#down(i);
  }

  clear(): void {
    this.#keys = [];
    this.#values = [];
  }

  #swap(a: number, b: number): void {
    [this.#keys[a], this.#keys[b]] = [this.#keys[b]!, this.#keys[a]!];
    [this.#values[a], this.#values[b]] = [this.#values[b]!, this.#values[a]!];
  }

  #up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.#keys[parent]! <= this.#keys[i]!) return;
      this.#swap(parent, i);
      i = parent;
    }
  }

  #down(i: number): void {
    const n = this.#keys.length;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < n && this.#keys[left]! < this.#keys[smallest]!) smallest = left;
      if (right < n && this.#keys[right]! < this.#keys[smallest]!) smallest = right;
      if (smallest === i) return;
      this.#swap(i, smallest);
      i = smallest;
    }
  }
}

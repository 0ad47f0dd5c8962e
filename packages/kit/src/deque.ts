/**
 * A double-ended queue on a growable ring buffer: O(1) push and shift at both ends, O(1)
 * peek and indexed read, where `Array#shift` is O(n) and an array with a moving head
 * index needs compacting. The capacity is a power of two so the wrap is a mask, and
 * doubles when full; the ring never shrinks (the owner's own bound — a scheduler's
 * `maxQueued…`, a connection's `maxPending` — caps how large it grows, and `clear`
 * releases it). Freed slots are overwritten with undefined so the collector can have
 * what they held.
 *
 * @example
 * const q = new Deque<string>();
 * q.push("b"); q.push("c"); q.unshift("a");
 * q.shift();  // "a"
 * q.pop();    // "c"
 * q.length;   // 1
 */
import { assert } from "./assert.ts";

/** Largest capacity: 2^30 slots, far past any bound a caller should set. */
const MAX_CAPACITY = 2 ** 30;

export class Deque<T> {
  #items: (T | undefined)[];
  #mask: number;
  #head = 0;
  #length = 0;

  /** `initialCapacity` is rounded up to a power of two (at least 2). */
  constructor(initialCapacity = 8) {
    assert(Number.isSafeInteger(initialCapacity) && initialCapacity >= 0, "initialCapacity is a count", {
      initialCapacity,
    });
    let capacity = 2;
    while (capacity < initialCapacity && capacity < MAX_CAPACITY) capacity *= 2;
    this.#items = new Array(capacity);
    this.#mask = capacity - 1;
  }

  get length(): number {
    return this.#length;
  }

  /** Appends at the back. */
  push(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#length) & this.#mask] = item;
    this.#length += 1;
  }

  /** Prepends at the front. */
  unshift(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#head = (this.#head - 1) & this.#mask;
    this.#items[this.#head] = item;
    this.#length += 1;
  }

  /** Removes and returns the front item, or undefined when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) & this.#mask;
    this.#length -= 1;
    return item;
  }

  /** Removes and returns the back item, or undefined when empty. */
  pop(): T | undefined {
    if (this.#length === 0) return undefined;
    this.#length -= 1;
    const index = (this.#head + this.#length) & this.#mask;
    const item = this.#items[index];
    this.#items[index] = undefined;
    return item;
  }

  /** The front item, or undefined when empty. */
  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#items[this.#head];
  }

  /** The back item, or undefined when empty. */
  peekBack(): T | undefined {
    return this.#length === 0 ? undefined : this.#items[(this.#head + this.#length - 1) & this.#mask];
  }

  /** The item `index` places from the front (0 is the front), or undefined out of range. */
  at(index: number): T | undefined {
    if (!(Number.isInteger(index) && index >= 0 && index < this.#length)) return undefined;
    return this.#items[(this.#head + index) & this.#mask];
  }

  /** Items from index `start` (0 is the front) to the back, as an array; the deque is unchanged. */
  slice(start = 0): T[] {
    const from = Math.max(0, Math.min(this.#length, Math.trunc(start)));
    const items: T[] = new Array(this.#length - from);
    for (let i = from; i < this.#length; i++)
      items[i - from] = this.#items[(this.#head + i) & this.#mask] as T;
    return items;
  }

  /** Removes every item and returns them front to back (e.g. to fail every waiter at once). */
  drain(): T[] {
    const items = [...this];
    this.clear();
    return items;
  }

  /** Forgets every item and releases the ring (back to two slots). */
  clear(): void {
    this.#items = new Array(2);
    this.#mask = 1;
    this.#head = 0;
    this.#length = 0;
  }

  /** Items front to back; do not change the deque while iterating. */
  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = 0; i < this.#length; i++) yield this.#items[(this.#head + i) & this.#mask] as T;
  }

  #grow(): void {
    const capacity = this.#items.length;
    assert(capacity < MAX_CAPACITY, "a deque holds at most 2^30 items", { capacity });
    const grown: (T | undefined)[] = new Array(capacity * 2);
    for (let i = 0; i < this.#length; i++) grown[i] = this.#items[(this.#head + i) & this.#mask];
    this.#items = grown;
    this.#mask = capacity * 2 - 1;
    this.#head = 0;
  }
}

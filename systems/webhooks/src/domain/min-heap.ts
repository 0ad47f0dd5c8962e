/**
 * A binary min-heap by a numeric key: O(log n) push and pop. The fair scheduler parks
 * rate-limited and throttled endpoints in one, keyed by the time they become ready, so a
 * pick never scans endpoints that cannot send yet.
 *
 * @example
 * const heap = new MinHeap<string>();
 * heap.push(30, "c"); heap.push(10, "a");
 * heap.pop(); // { key: 10, value: "a" }
 */
export class MinHeap<T> {
  readonly #keys: number[] = [];
  readonly #values: T[] = [];

  get size(): number {
    return this.#keys.length;
  }

  push(key: number, value: T): void {
    this.#keys.push(key);
    this.#values.push(value);
    this.#up(this.#keys.length - 1);
  }

  /** The smallest key, or undefined when empty. */
  peekKey(): number | undefined {
    return this.#keys[0];
  }

  pop(): { key: number; value: T } | undefined {
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

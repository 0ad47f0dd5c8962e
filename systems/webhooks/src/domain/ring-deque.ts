/**
 * A FIFO on a growable ring buffer: O(1) push, shift and peek, where `Array#shift` is
 * O(n). The fair scheduler keeps one per endpoint (tasks) and rings of tenants and
 * endpoints; its own bounds (maxQueued…) cap how large any of them grows.
 *
 * @example
 * const q = new RingDeque<string>();
 * q.push("a"); q.push("b");
 * q.shift(); // "a"
 */
export class RingDeque<T> {
  #items: (T | undefined)[];
  #head = 0;
  #length = 0;

  constructor(initialCapacity = 8) {
    this.#items = new Array(Math.max(2, initialCapacity));
  }

  get length(): number {
    return this.#length;
  }

  push(item: T): void {
    if (this.#length === this.#items.length) this.#grow();
    this.#items[(this.#head + this.#length) % this.#items.length] = item;
    this.#length += 1;
  }

  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined; // let the garbage collector have it
    this.#head = (this.#head + 1) % this.#items.length;
    this.#length -= 1;
    return item;
  }

  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#items[this.#head];
  }

  #grow(): void {
    const grown: (T | undefined)[] = new Array(this.#items.length * 2);
    for (let i = 0; i < this.#length; i++) grown[i] = this.#items[(this.#head + i) % this.#items.length];
    this.#items = grown;
    this.#head = 0;
  }
}

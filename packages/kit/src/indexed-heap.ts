/**
 * A binary heap whose nodes remember their own position, so a node whose priority changed
 * is fixed in O(log n) without a search: LFU's counts grow on every hit, Bélády's next-use
 * moves forward on every hit. `before(a, b)` true means a comes out first. (For a heap of
 * plain keyed entries, see `min-heap.ts`.)
 *
 * @example
 * const heap = new IndexedHeap<{ p: number; heapIndex: number }>((a, b) => a.p < b.p);
 * const x = { p: 3, heapIndex: -1 };
 * heap.push(x);
 * x.p = 0; heap.update(x);
 * heap.pop(); // x
 */
import { assert } from "./assert.ts";

export interface HeapNode {
  /** Position in the heap's array; -1 when not in the heap. */
  heapIndex: number;
}

export class IndexedHeap<T extends HeapNode> {
  readonly #items: T[] = [];
  readonly #before: (a: T, b: T) => boolean;

  constructor(before: (a: T, b: T) => boolean) {
    this.#before = before;
  }

  get length(): number {
    return this.#items.length;
  }

  /** The node that comes out first, or undefined when empty. */
  peek(): T | undefined {
    return this.#items[0];
  }

  push(node: T): void {
    assert(node.heapIndex === -1, "a node is in the heap at most once");
    node.heapIndex = this.#items.length;
    this.#items.push(node);
    this.#siftUp(node.heapIndex);
  }

  /** Removes and returns the first node, or undefined when empty. */
  pop(): T | undefined {
    const top = this.#items[0];
    if (top !== undefined) this.remove(top);
    return top;
  }

  /** Removes `node`, which must be in this heap. */
  remove(node: T): void {
    const index = node.heapIndex;
    assert(this.#items[index] === node, "remove() needs a node of this heap");
    const last = this.#items.pop()!;
    node.heapIndex = -1;
    if (last === node) return;
    this.#items[index] = last;
    last.heapIndex = index;
    this.update(last);
  }

  /** Restores the order after `node`'s priority changed either way. */
  update(node: T): void {
    assert(this.#items[node.heapIndex] === node, "update() needs a node of this heap");
    this.#siftDown(this.#siftUp(node.heapIndex));
  }

  #siftUp(start: number): number {
    const items = this.#items;
    const node = items[start]!;
    let index = start;
    while (index > 0) {
      const parentIndex = (index - 1) >>> 1;
      const parent = items[parentIndex]!;
      if (!this.#before(node, parent)) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = node;
    node.heapIndex = index;
    return index;
  }

  #siftDown(start: number): void {
    const items = this.#items;
    const node = items[start]!;
    const length = items.length;
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const child = right < length && this.#before(items[right]!, items[left]!) ? right : left;
      if (!this.#before(items[child]!, node)) break;
      items[index] = items[child]!;
      items[index]!.heapIndex = index;
      index = child;
    }
    items[index] = node;
    node.heapIndex = index;
  }
}

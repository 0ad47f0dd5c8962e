/**
 * The in-process store's active expiry: a min-heap of (expiresAtMs, key), so a sweep
 * finds expired keys in O(log n) each instead of scanning the keyspace (Redis samples
 * random keys; an exact heap is cheaper at our sizes and never misses one).
 *
 * Entries are never updated in place: a TTL change pushes a new entry and the old one
 * goes stale. The owner checks each popped entry against the key's current expiry and
 * drops stale ones; `compact` rebuilds the heap when stale entries outnumber live ones,
 * so TTLs refreshed on every call (a rate limiter's) cannot grow it without bound.
 *
 * @example
 * const queue = new ExpiryQueue();
 * queue.push(1_000, "a");
 * queue.popDue(1_500); // { atMs: 1000, key: "a" }
 */

export interface ExpiryEntry {
  atMs: number;
  key: string;
}

export class ExpiryQueue {
  #heap: ExpiryEntry[] = [];

  get size(): number {
    return this.#heap.length;
  }

  push(atMs: number, key: string): void {
    this.#heap.push({ atMs, key });
    this.#siftUp(this.#heap.length - 1);
  }

  /** Removes and returns the earliest entry if it expired before `nowMs` (Redis: expired when now > at). */
  popDue(nowMs: number): ExpiryEntry | undefined {
    const top = this.#heap[0];
    if (top === undefined || !(nowMs > top.atMs)) return undefined;
    const last = this.#heap.pop()!;
    if (this.#heap.length > 0) {
      this.#heap[0] = last;
      this.#siftDown(0);
    }
    return top;
  }

  /** Rebuilds the heap from the entries `isLive` keeps (O(n)); the caller decides when. */
  compact(isLive: (entry: ExpiryEntry) => boolean): void {
    this.#heap = this.#heap.filter(isLive);
    for (let index = (this.#heap.length >> 1) - 1; index >= 0; index--) this.#siftDown(index);
  }

  clear(): void {
    this.#heap = [];
  }

  #siftUp(index: number): void {
    const heap = this.#heap;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.atMs <= heap[index]!.atMs) return;
      [heap[parent], heap[index]] = [heap[index]!, heap[parent]!];
      index = parent;
    }
  }

  #siftDown(index: number): void {
    const heap = this.#heap;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < heap.length && heap[left]!.atMs < heap[smallest]!.atMs) smallest = left;
      if (right < heap.length && heap[right]!.atMs < heap[smallest]!.atMs) smallest = right;
      if (smallest === index) return;
      [heap[smallest], heap[index]] = [heap[index]!, heap[smallest]!];
      index = smallest;
    }
  }
}

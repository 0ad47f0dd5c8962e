/**
 * The in-process store's active expiry: kit's min-heap of (expiresAtMs, key), so a sweep
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
import { MinHeap } from "@casebook/kit/min-heap";

export interface ExpiryEntry {
  atMs: number;
  key: string;
}

export class ExpiryQueue {
  readonly #heap = new MinHeap<string>();

  get size(): number {
    return this.#heap.size;
  }

  push(atMs: number, key: string): void {
    this.#heap.push(atMs, key);
  }

  /** Removes and returns the earliest entry if it expired before `nowMs` (Redis: expired when now > at). */
  popDue(nowMs: number): ExpiryEntry | undefined {
    const atMs = this.#heap.peekKey();
    if (atMs === undefined || !(nowMs > atMs)) return undefined;
    const { value: key } = this.#heap.pop()!;
    return { atMs, key };
  }

  /** Rebuilds the heap from the entries `isLive` keeps (O(n)); the caller decides when. */
  compact(isLive: (entry: ExpiryEntry) => boolean): void {
    this.#heap.retain((atMs, key) => isLive({ atMs, key }));
  }

  clear(): void {
    this.#heap.clear();
  }
}

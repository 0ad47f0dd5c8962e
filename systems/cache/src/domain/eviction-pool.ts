/**
 * Redis's eviction pool (CA-11): the best victims seen by recent samplings, sorted by
 * score, capped at 16. Each eviction adds a fresh sample and takes the best candidate
 * still alive, so a few samples per eviction accumulate into a good approximation of
 * the global order — without keeping one (no LRU list to update on every read).
 *
 * @example
 * const pool = new EvictionPool(16);
 * pool.offer("a", 10);
 * pool.offer("b", 99);
 * pool.popBest((key) => keyspaceHas(key)); // "b": the highest score
 *
 * Like Redis's pool it holds key names, not entries: a pooled key is looked up again when
 * it comes out, so a key deleted meanwhile (or deleted and written again) is never stale.
 */

/** Redis's EVPOOL_SIZE. */
export const EVICTION_POOL_SIZE = 16;

export class EvictionPool {
  readonly capacity: number;
  /** Sorted ascending by score: the best victim is last. */
  #entries: string[] = [];
  #scores: number[] = [];

  constructor(capacity: number = EVICTION_POOL_SIZE) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError("pool capacity must be >= 1");
    this.capacity = capacity;
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Adds a candidate unless the pool is full of better ones; a candidate already pooled is re-scored. */
  offer(entry: string, score: number): void {
    const existing = this.#entries.indexOf(entry);
    if (existing >= 0) {
      this.#entries.splice(existing, 1);
      this.#scores.splice(existing, 1);
    }
    let k = 0;
    while (k < this.#scores.length && this.#scores[k]! < score) k += 1;
    if (this.#entries.length >= this.capacity) {
      if (k === 0) return; // worse than every pooled candidate
      // Full: drop the worst (index 0) to make room below position k.
      this.#entries.shift();
      this.#scores.shift();
      k -= 1;
    }
    this.#entries.splice(k, 0, entry);
    this.#scores.splice(k, 0, score);
  }

  /** Removes and returns the best candidate for which `isLive` holds; stale ones are dropped on the way. */
  popBest(isLive: (entry: string) => boolean): string | undefined {
    // Bounded by the pool's size: every pass removes one candidate.
    while (this.#entries.length > 0) {
      const entry = this.#entries.pop()!;
      this.#scores.pop();
      if (isLive(entry)) return entry;
    }
    return undefined;
  }

  clear(): void {
    this.#entries = [];
    this.#scores = [];
  }
}

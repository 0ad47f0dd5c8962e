/**
 * The hot-key L1 (CA-18): a small cache inside each application process, in front of the
 * distributed cache, holding values for a TTL of seconds. A key read thousands of times
 * a second by one process then costs the cache node one read per TTL per process: the
 * node's load for that key no longer grows with the traffic, only with the number of
 * application servers. The price is staleness: an update elsewhere is seen up to `ttlMs`
 * late, which is why the TTL is seconds, not minutes, and why only hot keys belong here.
 *
 * Bounded by entries (least recently used goes first: a Map's insertion order, refreshed
 * on each hit) and by time (an expired entry is dropped when met); the clock is injected.
 *
 * @example
 * const l1 = new HotKeyL1<string>({ maxEntries: 1_000, ttlMs: 2_000, clock: systemClock });
 * l1.set("event:42", page);
 * l1.get("event:42"); // page, for two seconds
 */
import type { Clock } from "@casebook/kit/clock";
import { requireInteger } from "../errors.ts";

/** Bound on the L1's TTL: a minute. Longer is a second cache layer with its own consistency story. */
export const MAX_L1_TTL_MS = 60_000;
/** Bound on L1 entries. */
export const MAX_L1_ENTRIES = 1_000_000;

export interface HotKeyL1Options {
  readonly maxEntries: number;
  readonly ttlMs: number;
  readonly clock: Clock;
}

interface Entry<V> {
  readonly value: V;
  readonly expiresAtMs: number;
}

export class HotKeyL1<V> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  readonly #clock: Clock;
  #hits = 0;
  #misses = 0;

  constructor(options: HotKeyL1Options) {
    requireInteger("l1.maxEntries", options.maxEntries, 1, MAX_L1_ENTRIES);
    requireInteger("l1.ttlMs", options.ttlMs, 1, MAX_L1_TTL_MS);
    this.#maxEntries = options.maxEntries;
    this.#ttlMs = options.ttlMs;
    this.#clock = options.clock;
  }

  get size(): number {
    return this.#entries.size;
  }

  get stats(): { hits: number; misses: number } {
    return { hits: this.#hits, misses: this.#misses };
  }

  /** The value while it is younger than the TTL; undefined (and dropped) after. */
  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.expiresAtMs <= this.#clock.monotonicMs()) {
      if (entry !== undefined) this.#entries.delete(key);
      this.#misses += 1;
      return undefined;
    }
    // Re-inserting moves the key to the back of the Map's order: the most recently used.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    this.#hits += 1;
    return entry.value;
  }

  /** Holds `value` for the TTL, evicting the least recently used entry when full. */
  set(key: string, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, { value, expiresAtMs: this.#clock.monotonicMs() + this.#ttlMs });
    if (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }

  /** Drops `key` (an invalidation this process knows about). */
  delete(key: string): void {
    this.#entries.delete(key);
  }
}

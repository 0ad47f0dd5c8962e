/**
 * The node's `allkeys-w-tinylfu` maxmemory policy (CA-24 on the node itself): the keyspace
 * keeps the values, a `WTinyLfu` keeps the keys with their accounted bytes as weights and
 * `maxmemory` as its weight bound, and decides who stays. Unlike the sampled policies
 * (CA-11), it keeps a global order (three intrusive lists) and a frequency sketch, so every
 * access costs O(1) list work instead of being free until eviction time.
 *
 * Admission semantics, different from Redis's policies: a SET always succeeds (+OK), but the
 * key enters the admission window and, when the window overflows, must beat probation's
 * oldest key on sketch frequency. A rejected candidate — possibly the key just written — is
 * evicted at once, so a one-hit wonder may be gone right after its SET (a later GET misses).
 * That is what keeps a scan of cold keys from flushing the popular ones.
 *
 * What is recorded: a GET hit and every write (as Caffeine does: a cache-aside miss, a GET
 * then a SET, counts once). DEL and expiry remove the key without counting an eviction.
 * The sketch is sized for the most entries `maxmemory` could hold (every entry costs at least
 * ENTRY_OVERHEAD_BYTES) and is not accounted in `used_memory`: 4 rows × 4 bits per counter,
 * 4 counters per entry, so 8 B per possible entry (2 MiB for 64 MiB of maxmemory).
 *
 * @example
 * const policy = new WTinyLfuEviction({ maxmemoryBytes: 1_000_000, random: seededRandom(1) });
 * const evicted = policy.written("user:1", entryBytes("user:1", "v")); // keys to delete now
 * policy.read("user:1");
 * policy.removed("user:1");
 */
import type { RandomSource } from "@casebook/kit/random";
import { MAX_ENTRIES_LIMIT } from "./cache-bounds.ts";
import { ENTRY_OVERHEAD_BYTES } from "./cache-entry.ts";
import { WTinyLfu } from "./w-tiny-lfu.ts";

export interface WTinyLfuEvictionOptions {
  /** The weight bound: the keyspace's maxmemory (> 0; with no limit there is nothing to decide). */
  readonly maxmemoryBytes: number;
  /** For the hash-flooding guard of admission. */
  readonly random: RandomSource;
}

export class WTinyLfuEviction {
  readonly #policy: WTinyLfu<string>;
  /** Keys the policy evicted during the current call, handed to the keyspace to delete. */
  #evicted: string[] = [];

  constructor(options: WTinyLfuEvictionOptions) {
    const mostEntries = Math.min(
      MAX_ENTRIES_LIMIT,
      Math.max(1, Math.floor(options.maxmemoryBytes / ENTRY_OVERHEAD_BYTES)),
    );
    this.#policy = new WTinyLfu<string>({
      // Bytes are the real bound; the entry bound only restates what maxmemory implies.
      maxEntries: MAX_ENTRIES_LIMIT,
      maxWeight: options.maxmemoryBytes,
      sketchEntries: mostEntries,
      random: options.random,
      onEvict: (key) => {
        this.#evicted.push(key);
      },
    });
  }

  /** Accounted bytes the policy holds: always the keyspace's `usedBytes` (asserted there). */
  get weight(): number {
    return this.#policy.weight;
  }

  get size(): number {
    return this.#policy.size;
  }

  /** A GET hit: counts in the sketch and refreshes the key's place. */
  read(key: string): void {
    this.#policy.get(key);
  }

  /**
   * A write of `bytes` (the entry's accounted size, new or changed): returns the keys to delete
   * from the keyspace to stay within maxmemory — possibly `key` itself (admission rejected it).
   */
  written(key: string, bytes: number): string[] {
    this.#evicted = [];
    this.#policy.set(key, bytes);
    const evicted = this.#evicted;
    this.#evicted = [];
    return evicted;
  }

  /** The key left the keyspace by DEL, expiry or eviction; a no-op when the policy already dropped it. */
  removed(key: string): void {
    this.#policy.delete(key);
  }

  /** FLUSHALL: no keys, but the sketch keeps its history of what was popular. */
  clear(): void {
    this.#policy.clear();
  }
}

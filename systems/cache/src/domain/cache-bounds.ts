/**
 * The two limits every policy here enforces at once: a count of entries and, optionally,
 * a total weight (bytes). The server sizes by bytes (maxmemory); the simulator by entries.
 * Shared so every policy validates them the same way and reports evictions the same way.
 *
 * @example
 * const bounds = resolveBounds({ maxEntries: 10_000, maxWeight: 64 * 2 ** 20 });
 * exceeds(bounds, 10_001, 0); // true: one entry too many
 */
import { requireInteger } from "../errors.ts";

/** Bound on maxEntries: a JS Map holds at most 2^24 entries. */
export const MAX_ENTRIES_LIMIT = 2 ** 24;

export interface CacheBoundsOptions {
  /** Most entries held at once (>= 1). */
  readonly maxEntries: number;
  /** Most total weight (e.g. bytes) held at once; unbounded when omitted. */
  readonly maxWeight?: number;
}

export interface CacheBounds {
  readonly maxEntries: number;
  /** Infinity when the cache is bounded by entries only. */
  readonly maxWeight: number;
}

/** Called once per key the policy evicts to respect its bounds (never for an explicit delete). */
export type EvictionListener<K> = (key: K, weight: number) => void;

/**
 * Validates and normalizes the bounds; throws CACHE_POLICY_CONFIG_INVALID naming the field.
 *
 * @example
 * resolveBounds({ maxEntries: 100 }).maxWeight; // Infinity
 */
export function resolveBounds(options: CacheBoundsOptions): CacheBounds {
  requireInteger("maxEntries", options.maxEntries, 1, MAX_ENTRIES_LIMIT);
  if (options.maxWeight === undefined) return { maxEntries: options.maxEntries, maxWeight: Infinity };
  requireInteger("maxWeight", options.maxWeight, 1, Number.MAX_SAFE_INTEGER);
  return { maxEntries: options.maxEntries, maxWeight: options.maxWeight };
}

/**
 * True when `entries` and `weight` break either bound.
 *
 * @example
 * exceeds({ maxEntries: 2, maxWeight: 100 }, 2, 101); // true
 */
export function exceeds(bounds: CacheBounds, entries: number, weight: number): boolean {
  return entries > bounds.maxEntries || weight > bounds.maxWeight;
}

/**
 * Calls `listener` for each evicted entry after the policy's state is consistent again;
 * every listener runs even if one throws, and the first error is rethrown after.
 *
 * @example
 * notifyEvicted([{ key: "a", weight: 1 }], (key) => keyspace.delete(key));
 */
export function notifyEvicted<K>(
  evicted: ReadonlyArray<{ readonly key: K; readonly weight: number }>,
  listener: EvictionListener<K> | undefined,
): void {
  if (listener === undefined || evicted.length === 0) return;
  let failure: { error: unknown } | undefined;
  for (const entry of evicted) {
    try {
      listener(entry.key, entry.weight);
    } catch (error) {
      failure ??= { error };
    }
  }
  if (failure) throw failure.error;
}

/**
 * One key of the keyspace (CA-08): the text's `{ key, value, expires_at, flags,
 * lru_clock | lfu_counter }`, plus the two positions that make sampling O(1).
 *
 * - `access` is Redis's 24-bit `lru` field: under an LRU policy the last access time
 *   (ms, wrapping at 2^30 so it stays a small integer), under an LFU policy
 *   `~((decay minutes << 8) | Morris counter)`, negative. One field, read by whichever policy
 *   runs; the sign tells a reader which policy wrote it, so a runtime policy switch reads old
 *   fields sensibly (lfu-counter.ts) until keys are touched and rewritten.
 * - `flags`: Redis keeps type and encoding bits there; this node stores strings only, so there
 *   are none, and the entry stays six fields.
 *
 * Accounting: an entry costs `key.length + value.length + ENTRY_OVERHEAD_BYTES` toward
 * maxmemory (see that constant for what it covers). Keys and values are latin1 strings:
 * one char per byte, so `.length` is the byte count.
 *
 * @example
 * entryBytes("user:1", "x".repeat(100)); // 6 + 100 + ENTRY_OVERHEAD_BYTES
 */

export interface CacheEntry {
  readonly key: string;
  value: string;
  /** Absolute wall-clock ms when the key expires; NO_EXPIRY when it has no TTL. */
  expiresAtMs: number;
  /** LRU clock or packed LFU counter, per the policy (see the module comment). */
  access: number;
  /** Index in the all-keys bag; -1 once the entry left the keyspace. */
  allSlot: number;
  /** Index in the keys-with-TTL bag; -1 when it has no TTL. */
  ttlSlot: number;
}

/** `expiresAtMs` of a key without TTL (0 is never a valid expiry: PXAT 0 is refused). */
export const NO_EXPIRY = 0;

/**
 * The bytes one entry costs beyond its key and value, measured on Node 24 x64 (V8 without
 * pointer compression) by `test/entry-overhead.test.ts`, which keeps this constant within
 * 25% of the truth: the entry object (6 fields, 72 B), its boxed expiry double (16 B), the
 * Map's hash-table slot with its growth slack (28–56 B), the bag slots (8–24 B) and the two
 * string headers with alignment (~40 B). Measured: ~205 B without TTL, ~230–245 B with one.
 * Redis's own per-key overhead is ~50–90 B: a JavaScript heap costs more per key.
 */
export const ENTRY_OVERHEAD_BYTES = 224;

/** What storing `key` → `value` costs toward maxmemory. */
export function entryBytes(key: string, value: string): number {
  return key.length + value.length + ENTRY_OVERHEAD_BYTES;
}

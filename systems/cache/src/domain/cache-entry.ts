/**
 * One key of the keyspace (CA-08): the text's `{ key, value, expires_at, flags,
 * lru_clock | lfu_counter }`, kept as one record of typed-array fields with the value's bytes
 * in the value arena (key-records.ts, value-arena.ts).
 *
 * - `access` is Redis's 24-bit `lru` field: under an LRU policy the last access time
 *   (ms, wrapping at 2^30 so it stays a small integer), under an LFU policy
 *   `~((decay minutes << 8) | Morris counter)`, negative. One field, read by whichever policy
 *   runs; the sign tells a reader which policy wrote it, so a runtime policy switch reads old
 *   fields sensibly (lfu-counter.ts) until keys are touched and rewritten.
 * - `flags`: Redis keeps type and encoding bits there; this node stores strings only, so there
 *   are none.
 *
 * Accounting: an entry costs `key.length + slotBytes(value.length) + ENTRY_OVERHEAD_BYTES`
 * toward maxmemory (see that constant for what it covers): the value counts as the arena slot
 * it takes, as Redis counts jemalloc's size class. Keys and values are latin1 strings: one
 * char per byte, so `.length` is the byte count.
 *
 * @example
 * entryBytes("user:1", "x".repeat(100)); // 6 + 112 (the slot of a 100-byte value) + ENTRY_OVERHEAD_BYTES
 */

import { slotBytes } from "./value-arena.ts";

/** One key as `Keyspace.lookup` shows it: a view read from the records (key-records.ts). */
export interface CacheEntry {
  readonly key: string;
  /** Copied out of the value arena when read. */
  readonly value: string;
  /** Absolute wall-clock ms when the key expires; NO_EXPIRY when it has no TTL. */
  readonly expiresAtMs: number;
  /** LRU clock or packed LFU counter, per the policy (see the module comment). */
  readonly access: number;
}

/** `expiresAtMs` of a key without TTL (0 is never a valid expiry: PXAT 0 is refused). */
export const NO_EXPIRY = 0;

/**
 * The bytes one key costs beyond its key's characters and its value's arena slot, measured
 * on Node 24 x64 (V8 without pointer compression) by `test/entry-overhead.test.ts`, which
 * keeps it within 15% of V8 heap used + external memory: the key string's header and
 * alignment (~20 B), its `Map` entry with the table's growth slack (28–56 B), its slot in
 * the keys array (8–16 B), the record's typed-array fields (28 B, up to twice with growth
 * slack) and its entry in the per-slot key index (a `Set`, ~30 B).
 * Redis's own per-key overhead is ~50–90 B (dictEntry, robj, sds headers, jemalloc classes).
 */
export const ENTRY_OVERHEAD_BYTES = 120;

/** What a key of `keyLength` chars with a value of `valueLength` bytes costs toward maxmemory. */
export function recordBytes(keyLength: number, valueLength: number): number {
  return keyLength + slotBytes(valueLength) + ENTRY_OVERHEAD_BYTES;
}

/** What storing `key` → `value` costs toward maxmemory: the value counts as its arena slot. */
export function entryBytes(key: string, value: string): number {
  return recordBytes(key.length, value.length);
}

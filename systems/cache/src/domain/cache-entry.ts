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
 * Accounting: an entry costs `slotBytes(key.length) + slotBytes(value.length) +
 * ENTRY_OVERHEAD_BYTES` toward maxmemory (see that constant for what it covers): key and value
 * count as the arena slots they take, as Redis counts jemalloc's size classes. Keys and values are latin1 strings: one
 * char per byte, so `.length` is the byte count.
 *
 * @example
 * entryBytes("user:1", "x".repeat(100)); // 16 + 112 (the slots of the key and value) + ENTRY_OVERHEAD_BYTES
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
 * The bytes one key costs beyond its key's and its value's arena slots, measured on Node 24
 * x64 by `test/entry-overhead.test.ts`, which keeps used_memory within 20% of V8 heap used +
 * external: the record's typed-array fields (46 B: key and value references and lengths,
 * expiry, access, TTL-bag slot and index, hash slot and its list links), up to twice that with
 * the arrays' doubling slack, and the hash table's buckets and hashes (~12–16 B at load
 * 3/8–3/4). Nothing per key is on the V8 heap. Redis's own per-key overhead is ~50–90 B
 * (dictEntry, robj, sds headers, bucket pointer, rounded to jemalloc's size classes).
 */
export const ENTRY_OVERHEAD_BYTES = 80;

/** What a key of `keyLength` chars with a value of `valueLength` bytes costs toward maxmemory. */
export function recordBytes(keyLength: number, valueLength: number): number {
  return slotBytes(keyLength) + slotBytes(valueLength) + ENTRY_OVERHEAD_BYTES;
}

/** What storing `key` → `value` costs toward maxmemory: the value counts as its arena slot. */
export function entryBytes(key: string, value: string): number {
  return recordBytes(key.length, value.length);
}

/**
 * The keyspace's hash table (issue 15): open addressing with linear probing over record ids,
 * in one Int32Array (id + 1 per bucket, 0 = empty), with each record's 32-bit hash kept beside
 * it so a probe compares key bytes only when the hashes match. The keys themselves live in the
 * value arena (key-records.ts): the V8 heap holds nothing per key.
 *
 * - Seeded: the hash is MurmurHash3 of the key's bytes with a per-process seed drawn from the
 *   injected RandomSource, so which keys collide is not known in advance (Redis seeds SipHash
 *   for the same reason). MurmurHash3 has seed-independent collision families, so this raises
 *   the bar for hash flooding without closing it the way SipHash does; see the README.
 * - Load factor ≤ 3/4, doubling (Redis's dict grows at 1 and rehashes incrementally; this
 *   rehashes at once, an O(n) pause at each doubling).
 * - Deletion shifts the following entries back (no tombstones), so probes stay short after
 *   churn, as after Redis's rehash.
 *
 * @example
 * const table = new KeyTable(seed, (id, key) => records.keyEquals(id, key));
 * table.insert(0, table.hashOf("user:1"));
 * table.find("user:1", table.hashOf("user:1")); // 0
 */
import { murmur3Latin1 } from "@casebook/kit/murmur3";

const INITIAL_BUCKETS = 1_024;

export class KeyTable {
  readonly #seed: number;
  readonly #equals: (id: number, key: string) => boolean;
  #buckets = new Int32Array(INITIAL_BUCKETS);
  #mask = INITIAL_BUCKETS - 1;
  #hashes = new Uint32Array(INITIAL_BUCKETS);
  #count = 0;

  constructor(seed: number, equals: (id: number, key: string) => boolean) {
    this.#seed = seed;
    this.#equals = equals;
  }

  get bytes(): number {
    return this.#buckets.byteLength + this.#hashes.byteLength;
  }

  hashOf(key: string): number {
    return murmur3Latin1(key, this.#seed);
  }

  /** The id of `key` (whose hash is `hash`), or −1. */
  find(key: string, hash: number): number {
    const buckets = this.#buckets;
    const mask = this.#mask;
    for (let i = hash & mask; ; i = (i + 1) & mask) {
      const entry = buckets[i]!;
      if (entry === 0) return -1;
      const id = entry - 1;
      if (this.#hashes[id] === hash && this.#equals(id, key)) return id;
    }
  }

  /** Adds record `id` (the next dense id) with `hash`. */
  insert(id: number, hash: number): void {
    if (id >= this.#hashes.length) {
      const grown = new Uint32Array(Math.max(id + 1, this.#hashes.length * 2));
      grown.set(this.#hashes);
      this.#hashes = grown;
    }
    this.#hashes[id] = hash;
    this.#count += 1;
    if (this.#count * 4 > this.#buckets.length * 3) this.#rehash(this.#buckets.length * 2);
    else this.#place(id);
  }

  /** Removes record `id`, shifting back the entries its bucket held up. */
  delete(id: number): void {
    const buckets = this.#buckets;
    const mask = this.#mask;
    let hole = this.#bucketOf(id);
    buckets[hole] = 0;
    this.#count -= 1;
    // Backward-shift deletion: move up every entry whose home bucket the hole now cuts off.
    for (let j = (hole + 1) & mask; buckets[j] !== 0; j = (j + 1) & mask) {
      const home = this.#hashes[buckets[j]! - 1]! & mask;
      const cutOff = hole <= j ? home <= hole || home > j : home <= hole && home > j;
      if (cutOff) {
        buckets[hole] = buckets[j]!;
        buckets[j] = 0;
        hole = j;
      }
    }
  }

  /** Record `from` now has id `to` (the keyspace moved its last record into a hole). */
  move(from: number, to: number): void {
    const bucket = this.#bucketOf(from);
    this.#hashes[to] = this.#hashes[from]!;
    this.#buckets[bucket] = to + 1;
  }

  clear(): void {
    this.#buckets = new Int32Array(INITIAL_BUCKETS);
    this.#mask = INITIAL_BUCKETS - 1;
    this.#hashes = new Uint32Array(INITIAL_BUCKETS);
    this.#count = 0;
  }

  #bucketOf(id: number): number {
    const buckets = this.#buckets;
    const mask = this.#mask;
    for (let i = this.#hashes[id]! & mask; ; i = (i + 1) & mask) {
      if (buckets[i] === id + 1) return i;
      if (buckets[i] === 0) throw new Error(`KeyTable: record ${id} is not in the table`);
    }
  }

  #place(id: number): void {
    const buckets = this.#buckets;
    const mask = this.#mask;
    let i = this.#hashes[id]! & mask;
    while (buckets[i] !== 0) i = (i + 1) & mask;
    buckets[i] = id + 1;
  }

  /** Ids are dense: 0..count−1 are every record. */
  #rehash(size: number): void {
    this.#buckets = new Int32Array(size);
    this.#mask = size - 1;
    for (let id = 0; id < this.#count; id++) this.#place(id);
  }
}

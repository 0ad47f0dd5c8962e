/**
 * Series met before, found by the bytes that name them: the ingest and each stream consumer see
 * the same few thousand label sets in every request and every message, so decoding their text,
 * checking Prometheus's rules, sorting and keying them (what a series costs the first time) is
 * done once per distinct encoding, and every later sighting is a hash and a byte comparison.
 *
 * Keyed by the exact bytes (a remote-write `TimeSeries`' label fields, a stream message's label
 * block): two encodings of one series (labels sent in another order) are two entries holding
 * equal values, which is harmless. Bounded: past `maxEntries` the whole table is forgotten and
 * refilled as series come (a churn of label sets costs misses, never memory).
 *
 * @example
 * const interner = new SeriesInterner<Entry>({ maxEntries: 262_144 });
 * const entry = interner.intern(bytes, start, end, makeEntry); // makeEntry runs on a miss only
 */
import { murmur3Range } from "@casebook/kit/murmur3";

/** Label sets an ingest or a consumer remembers by default: 262,144 series, a few hundred MiB at most. */
export const DEFAULT_INTERNED_SERIES = 262_144;

interface Slot<T> {
  readonly bytes: Uint8Array;
  readonly value: T;
  next: Slot<T> | undefined;
}

/**
 * The interner's key for `bytes[start, end)`: kit's MurmurHash3 (four bytes a step; FNV-1a's
 * multiply per byte cost ~1.3 ns a byte), kept to 30 bits so the map's key is a small integer,
 * never a heap number. Not stored anywhere, so free to change.
 */
export function seriesHash(bytes: Uint8Array, start: number, end: number): number {
  return murmur3Range(bytes, start, end) & 0x3fffffff;
}

function sameBytes(stored: Uint8Array, bytes: Uint8Array, start: number, end: number): boolean {
  if (stored.length !== end - start) return false;
  for (let i = 0; i < stored.length; i++) if (stored[i] !== bytes[start + i]) return false;
  return true;
}

export class SeriesInterner<T> {
  readonly #maxEntries: number;
  #slots = new Map<number, Slot<T>>();
  #size = 0;
  /** Times the table was full and forgotten. */
  resets = 0;

  constructor(options: { maxEntries: number }) {
    this.#maxEntries = options.maxEntries;
  }

  get size(): number {
    return this.#size;
  }

  /**
   * The value interned for `bytes[start, end)`, or `make`'s for it (kept unless undefined:
   * a refusal is not remembered, so it is found and named again).
   */
  intern(
    bytes: Uint8Array,
    start: number,
    end: number,
    make: (bytes: Uint8Array, start: number, end: number) => T | undefined,
  ): T | undefined {
    const hash = seriesHash(bytes, start, end);
    const first = this.#slots.get(hash);
    for (let slot = first; slot !== undefined; slot = slot.next)
      if (sameBytes(slot.bytes, bytes, start, end)) return slot.value;
    const value = make(bytes, start, end);
    if (value === undefined) return undefined;
    if (this.#size >= this.#maxEntries) {
      this.#slots = new Map();
      this.#size = 0;
      this.resets++;
    }
    // A copy of its own: a Buffer's slice (a stream message's data is one) would be a view
    // keeping the whole read chunk alive — and would change if that memory were reused.
    const own = new Uint8Array(end - start);
    own.set(bytes.subarray(start, end));
    this.#slots.set(hash, { bytes: own, value, next: this.#slots.get(hash) });
    this.#size++;
    return value;
  }
}

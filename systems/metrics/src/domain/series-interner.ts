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

/** Label sets an ingest or a consumer remembers by default: 262,144 series, a few hundred MiB at most. */
export const DEFAULT_INTERNED_SERIES = 262_144;

interface Slot<T> {
  readonly bytes: Uint8Array;
  readonly value: T;
  next: Slot<T> | undefined;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** FNV-1a over `bytes[start, end)`, unsigned 32 bits. */
export function fnv1a32Bytes(bytes: Uint8Array, start: number, end: number): number {
  let hash = FNV_OFFSET;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ bytes[i]!, FNV_PRIME);
  return hash >>> 0;
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
    const hash = fnv1a32Bytes(bytes, start, end);
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
    this.#slots.set(hash, { bytes: bytes.slice(start, end), value, next: this.#slots.get(hash) });
    this.#size++;
    return value;
  }
}

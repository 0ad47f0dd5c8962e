/**
 * TinyLFU's doorkeeper: a small Bloom filter in front of the count-min sketch. The first
 * sighting of a key only sets its bits here; only keys seen again reach the sketch's
 * counters, so the long tail of one-hit wonders does not crowd the counters of keys that
 * matter. Cleared at each aging reset, like the paper says.
 *
 * @example
 * const door = new Doorkeeper(1_024);
 * door.put(hashKey("a")); // false: first sighting
 * door.put(hashKey("a")); // true: seen before (or a false positive)
 */
import { fmix32 } from "@casebook/kit/fmix32";

/** Bits probed per key: with 8 bits per expected key, 3 probes give ~3% false positives. */
const PROBES = 3;
const BITS_PER_KEY = 8;
/** Bound on the filter's size: 2^27 bits is 16 MiB. */
const MAX_BITS = 2 ** 27;

export class Doorkeeper {
  readonly #bits: Uint32Array;
  readonly #mask: number;

  /** A filter sized for `expectedKeys` distinct keys between two resets. */
  constructor(expectedKeys: number) {
    const wanted = Math.max(64, Math.min(MAX_BITS, expectedKeys * BITS_PER_KEY));
    const bitCount = 2 ** Math.ceil(Math.log2(wanted));
    this.#bits = new Uint32Array(bitCount / 32);
    this.#mask = bitCount - 1;
  }

  /** Sets the key's bits; true when they were all set already (seen before, or a false positive). */
  put(hash: number): boolean {
    const step = fmix32(hash ^ 0x5bd1e995) | 1;
    let seen = true;
    for (let i = 0; i < PROBES; i++) {
      const bit = (hash + Math.imul(i, step)) & this.#mask;
      const word = bit >>> 5;
      const flag = 1 << (bit & 31);
      if ((this.#bits[word]! & flag) === 0) {
        seen = false;
        this.#bits[word] = this.#bits[word]! | flag;
      }
    }
    return seen;
  }

  /** True when all of the key's bits are set. */
  has(hash: number): boolean {
    const step = fmix32(hash ^ 0x5bd1e995) | 1;
    for (let i = 0; i < PROBES; i++) {
      const bit = (hash + Math.imul(i, step)) & this.#mask;
      if ((this.#bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }

  clear(): void {
    this.#bits.fill(0);
  }
}

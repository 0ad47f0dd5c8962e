/**
 * TinyLFU's frequency sketch: a count-min sketch of depth 4 with 4-bit counters, aged by
 * halving every counter after `sampleSize` increments (the paper's "reset"), so that the
 * frequencies describe the recent past and a key popular last hour does not keep its place
 * forever. 4 bits are enough because admission only compares two keys' frequencies and
 * the aging keeps counts small: a counter saturates at 15 and stays there until halved.
 *
 * Counters live 8 to a 32-bit word in one typed array: 16 counters per cached entry
 * (4 rows × 4·capacity) is 8 bytes per entry. The 4 row indexes come from one 32-bit
 * hash by double hashing (h1 + r·h2): two keys that share a counter in one row part
 * ways in the others unless their h2 also agree, which is what makes the min a good estimate.
 *
 * @example
 * const sketch = CountMinSketch.forCapacity(1_000);
 * sketch.increment(hashKey("a"));
 * sketch.frequency(hashKey("a")); // 1 (or more: a count-min sketch may overestimate, never under)
 */

import { fmix32 } from "@casebook/kit/fmix32";
import { requireInteger } from "../errors.ts";
import { Doorkeeper } from "./doorkeeper.ts";

export const SKETCH_DEPTH = 4;
/** A 4-bit counter saturates here. */
export const MAX_COUNTER = 15;
/** Bound on counters per row: 2^24 × 4 rows × 4 bits is 32 MiB. */
export const MAX_WIDTH = 2 ** 24;
/** Counters per row per cached entry (Caffeine's sizing: 16 counters per entry over 4 rows). */
const WIDTH_PER_ENTRY = 4;
/** TinyLFU's W: the sketch ages after 10 increments per cached entry. */
const SAMPLES_PER_ENTRY = 10;
const ODD_COUNTERS = 0x11111111;
const HALVE_MASK = 0x77777777;

export interface CountMinSketchOptions {
  /** Counters per row; rounded up to a power of two, at most MAX_WIDTH. */
  readonly width: number;
  /** Increments after which every counter halves (TinyLFU's sample size W). */
  readonly sampleSize: number;
  /** Put a doorkeeper Bloom filter in front of the counters. */
  readonly doorkeeper?: boolean;
}

export class CountMinSketch {
  readonly #table: Uint32Array;
  readonly #mask: number;
  readonly #width: number;
  readonly #sampleSize: number;
  readonly #doorkeeper: Doorkeeper | null;
  #additions = 0;
  #resets = 0;

  constructor(options: CountMinSketchOptions) {
    requireInteger("width", options.width, 1, MAX_WIDTH);
    requireInteger("sampleSize", options.sampleSize, 1, 2 ** 31);
    // At least 8 counters per row, so a row fills whole 32-bit words.
    this.#width = Math.max(8, 2 ** Math.ceil(Math.log2(options.width)));
    this.#mask = this.#width - 1;
    this.#table = new Uint32Array((SKETCH_DEPTH * this.#width) / 8);
    this.#sampleSize = options.sampleSize;
    this.#doorkeeper = options.doorkeeper ? new Doorkeeper(options.sampleSize) : null;
  }

  /**
   * A sketch sized for a cache of `entries` (Caffeine's sizing): 4·entries counters per
   * row, aging every 10·entries increments.
   *
   * @example
   * CountMinSketch.forCapacity(10_000, { doorkeeper: true });
   */
  static forCapacity(entries: number, options: { doorkeeper?: boolean } = {}): CountMinSketch {
    requireInteger("entries", entries, 1, 2 ** 31);
    return new CountMinSketch({
      width: Math.min(MAX_WIDTH, Math.max(16, entries) * WIDTH_PER_ENTRY),
      sampleSize: Math.min(2 ** 31, Math.max(16, entries) * SAMPLES_PER_ENTRY),
      doorkeeper: options.doorkeeper ?? false,
    });
  }

  /** Counters per row (after rounding). */
  get width(): number {
    return this.#width;
  }

  /** Increments since the last reset (halved by each reset, as the counters are). */
  get additions(): number {
    return this.#additions;
  }

  /** How many times the sketch has aged. */
  get resets(): number {
    return this.#resets;
  }

  /** Records one occurrence of the key with this 32-bit hash; ages the sketch every sampleSize calls. */
  increment(hash: number): void {
    if (this.#doorkeeper === null || this.#doorkeeper.put(hash)) this.#incrementCounters(hash);
    this.#additions++;
    if (this.#additions >= this.#sampleSize) this.reset();
  }

  /** The estimated count of the key: never below the true count since the last reset (capped at 15, 16 with a doorkeeper). */
  frequency(hash: number): number {
    const step = rowStep(hash);
    let min = MAX_COUNTER;
    for (let row = 0; row < SKETCH_DEPTH; row++) {
      const slot = row * this.#width + ((hash + row * step) & this.#mask);
      const count = (this.#table[slot >>> 3]! >>> ((slot & 7) << 2)) & 0xf;
      if (count < min) min = count;
    }
    if (this.#doorkeeper?.has(hash)) min++;
    return min;
  }

  /** Ages the sketch: halves every counter and clears the doorkeeper. */
  reset(): void {
    let odd = 0;
    for (let i = 0; i < this.#table.length; i++) {
      const word = this.#table[i]!;
      odd += popcount(word & ODD_COUNTERS);
      this.#table[i] = (word >>> 1) & HALVE_MASK;
    }
    // Halving drops each odd counter's last half unit: take those out of the count as well
    // (spread over the 4 rows), as Caffeine does, so the next reset is not premature.
    this.#additions = Math.max(0, (this.#additions - (odd >>> 2)) >>> 1);
    this.#doorkeeper?.clear();
    this.#resets++;
  }

  #incrementCounters(hash: number): void {
    const step = rowStep(hash);
    for (let row = 0; row < SKETCH_DEPTH; row++) {
      const slot = row * this.#width + ((hash + row * step) & this.#mask);
      const word = slot >>> 3;
      const shift = (slot & 7) << 2;
      if (((this.#table[word]! >>> shift) & 0xf) < MAX_COUNTER) {
        this.#table[word] = this.#table[word]! + (1 << shift);
      }
    }
  }
}

/** The double-hashing step, derived from the same hash by another mix; odd, so it never collapses to 0 mod width. */
function rowStep(hash: number): number {
  return fmix32(hash ^ 0x9e3779b9) | 1;
}

function popcount(word: number): number {
  let x = word - ((word >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24) & 0xff;
}

/**
 * Which keys are hot (CA-18): a count-min sketch of recent reads per key (the W-TinyLFU
 * sketch: 4-bit counters, halved every `sampleSize` reads so the counts describe the
 * recent past), and a key is hot once its estimate reaches `threshold`. Fixed memory
 * whatever the key space, which is the point: an application reads millions of distinct
 * keys, and counting each one exactly would itself be a memory problem. A sketch may
 * overestimate (a cold key sharing counters with hot ones), never underestimate: the cost
 * of a mistake is one cold key kept a few seconds in the L1.
 *
 * @example
 * const hot = new HotKeyDetector({ capacity: 10_000, threshold: 8 });
 * for (let i = 0; i < 20; i++) hot.record("event:42");
 * hot.isHot("event:42"); // true
 * hot.isHot("event:7");  // false
 */

import { murmur3 } from "@casebook/kit/murmur3";
import { requireInteger } from "../errors.ts";
import { CountMinSketch, MAX_COUNTER } from "./count-min-sketch.ts";

export interface HotKeyDetectorOptions {
  /** Distinct keys the sketch is sized for (its width and aging period follow from it). */
  readonly capacity: number;
  /** Reads in the recent window at which a key counts as hot; at most the counters' 15. */
  readonly threshold: number;
}

export class HotKeyDetector {
  readonly #sketch: CountMinSketch;
  readonly #threshold: number;

  constructor(options: HotKeyDetectorOptions) {
    requireInteger("hotKeys.threshold", options.threshold, 1, MAX_COUNTER);
    this.#sketch = CountMinSketch.forCapacity(options.capacity);
    this.#threshold = options.threshold;
  }

  /** Counts one read of `key`; true when it is hot (this read included). */
  record(key: string): boolean {
    const hash = murmur3(key);
    this.#sketch.increment(hash);
    return this.#sketch.frequency(hash) >= this.#threshold;
  }

  /** True when `key`'s recent reads reach the threshold (does not count a read). */
  isHot(key: string): boolean {
    return this.#sketch.frequency(murmur3(key)) >= this.#threshold;
  }
}

/**
 * Zipf-distributed requests: the key of rank r (1-based) is requested with probability
 * proportional to 1 / r^s. s = 0.99 is the usual model of web and cache traffic (Breslau
 * et al. 1999): a few keys take a large share, and a long tail is requested rarely.
 *
 * Sampling is by inversion of a precomputed CDF with binary search: exact for any s
 * (rejection-inversion, Hörmann & Derflinger, is O(1) per sample and O(1) memory, but
 * approximate in its setup and harder to check); the table is one Float64Array of N
 * entries (800 KB for 100,000 keys) and a sample costs log2(N) comparisons.
 * Rank r is key id r − 1, so key 0 is the most popular.
 *
 * @example
 * const zipf = new ZipfSampler(100_000, 0.99);
 * zipf.sample(seededRandom(1)); // a key id in [0, 100000), small ids far more often
 * zipfTrace({ keys: 100_000, requests: 1_000_000, random: seededRandom("zipf") });
 */
import type { RandomSource } from "@casebook/kit/random";
import { requireInteger, requireNumber } from "../errors.ts";
import { MAX_KEY_ID } from "./trace-keys.ts";

/** Bound on the length of one generated trace (an Int32Array of 2^26 is 256 MiB). */
export const MAX_TRACE_REQUESTS = 2 ** 26;

export class ZipfSampler {
  readonly #cdf: Float64Array;

  /** A sampler over key ids [0, keys) with exponent `exponent` (> 0). */
  constructor(keys: number, exponent: number) {
    requireInteger("keys", keys, 1, MAX_KEY_ID + 1);
    requireNumber("exponent", exponent, 1e-9, 10);
    const cdf = new Float64Array(keys);
    let total = 0;
    for (let rank = 1; rank <= keys; rank++) {
      total += rank ** -exponent;
      cdf[rank - 1] = total;
    }
    for (let i = 0; i < keys; i++) cdf[i] = cdf[i]! / total;
    // Rounding must not leave a sliver above the last entry that no key covers.
    cdf[keys - 1] = 1;
    this.#cdf = cdf;
  }

  get keys(): number {
    return this.#cdf.length;
  }

  /** P(key id <= id): the share of requests that go to the `id + 1` most popular keys. */
  cumulative(id: number): number {
    return this.#cdf[id] ?? 1;
  }

  /** One key id: the first whose cumulative probability exceeds a uniform draw. */
  sample(random: RandomSource): number {
    const u = random.next();
    const cdf = this.#cdf;
    let low = 0;
    let high = cdf.length - 1;
    // Binary search: at most log2(keys) + 1 passes.
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (cdf[mid]! > u) high = mid;
      else low = mid + 1;
    }
    return low;
  }
}

export interface ZipfTraceOptions {
  readonly keys: number;
  readonly requests: number;
  /** Zipf exponent s (0.99 by default). */
  readonly exponent?: number;
  readonly random: RandomSource;
}

/**
 * `requests` independent Zipf draws over `keys` key ids.
 *
 * @example
 * zipfTrace({ keys: 1_000, requests: 10_000, random: seededRandom(7) }).length; // 10000
 */
export function zipfTrace(options: ZipfTraceOptions): Int32Array {
  requireInteger("requests", options.requests, 0, MAX_TRACE_REQUESTS);
  const sampler = new ZipfSampler(options.keys, options.exponent ?? 0.99);
  const trace = new Int32Array(options.requests);
  for (let i = 0; i < trace.length; i++) trace[i] = sampler.sample(options.random);
  return trace;
}

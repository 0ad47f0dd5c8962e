/**
 * A scan-polluted trace: Zipf traffic interrupted by long sequential scans of keys that
 * are requested once and never again (a batch job, a crawler, a report walking a
 * table). Each scan is longer than the cache, so an LRU, which admits everything, is
 * flushed by every scan and must rebuild its hot set from misses; a policy that judges
 * newcomers by frequency lets the scan pass through.
 *
 * Layout: the trace is cut into equal segments, one per scan, and each scan sits at a
 * random offset inside its segment; the scans take exactly `scanFraction` of the requests
 * (rounded to whole scans). Scan key ids start at `keys`, so they never collide with Zipf
 * keys or with each other.
 *
 * @example
 * scanPollutedTrace({ keys: 100_000, requests: 1_000_000, scanLength: 20_000, random: seededRandom(1) });
 * // 10 scans of 20,000 fresh keys (20% of requests), Zipf(0.99) around them
 */
import type { RandomSource } from "@casebook/kit/random";
import { int } from "@casebook/kit/random";
import { requireInteger, requireNumber } from "../errors.ts";
import { MAX_KEY_ID } from "./trace-keys.ts";
import { MAX_TRACE_REQUESTS, ZipfSampler } from "./zipf-trace.ts";

export interface ScanTraceOptions {
  readonly keys: number;
  readonly requests: number;
  /** Share of requests that belong to scans (0.2 by default). */
  readonly scanFraction?: number;
  /** Requests per scan, each a fresh key. */
  readonly scanLength: number;
  readonly exponent?: number;
  readonly random: RandomSource;
}

export function scanPollutedTrace(options: ScanTraceOptions): Int32Array {
  const { keys, requests, scanLength, random } = options;
  const scanFraction = options.scanFraction ?? 0.2;
  requireInteger("requests", requests, 1, MAX_TRACE_REQUESTS);
  requireInteger("scanLength", scanLength, 1, requests);
  requireNumber("scanFraction", scanFraction, 0, 1);
  // Whole scans only, and never more than fit end to end.
  const scans = Math.min(
    Math.round((requests * scanFraction) / scanLength),
    Math.floor(requests / scanLength),
  );
  requireInteger("keys + scan keys", keys + scans * scanLength - 1, 0, MAX_KEY_ID);
  const sampler = new ZipfSampler(keys, options.exponent ?? 0.99);
  const trace = new Int32Array(requests);
  const segment = scans === 0 ? requests : Math.floor(requests / scans);
  let nextScanKey = keys;
  let scanStart = scans === 0 ? requests : int(random, segment - scanLength + 1);
  let scansDone = 0;
  for (let i = 0; i < requests; ) {
    if (i === scanStart) {
      for (let j = 0; j < scanLength; j++) trace[i + j] = nextScanKey++;
      i += scanLength;
      scansDone++;
      scanStart = scansDone < scans ? scansDone * segment + int(random, segment - scanLength + 1) : requests;
      continue;
    }
    trace[i] = sampler.sample(random);
    i++;
  }
  return trace;
}

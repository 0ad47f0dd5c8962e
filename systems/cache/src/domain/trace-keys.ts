/**
 * A trace is an Int32Array of key ids, one per request. Ids are small non-negative
 * integers so offline passes (Bélády's next-use index) can use a flat array per key
 * instead of a hash map; this checks that, once, before such a pass.
 *
 * @example
 * requireTraceKeys(Int32Array.from([0, 5, 2])); // 5, the largest id
 */
import { policyErrors } from "../errors.ts";

/** Bound on key ids: a flat per-key array of 2^26 Int32 slots is 256 MiB. */
export const MAX_KEY_ID = 2 ** 26 - 1;

/** Returns the largest key id; throws CACHE_TRACE_INVALID when one is negative or above MAX_KEY_ID. */
export function requireTraceKeys(trace: Int32Array): number {
  let max = -1;
  for (let i = 0; i < trace.length; i++) {
    const key = trace[i]!;
    if (key < 0 || key > MAX_KEY_ID) {
      throw policyErrors.create("CACHE_TRACE_INVALID", {
        fields: { field: `trace[${i}]`, got: key, maxKeyId: MAX_KEY_ID },
      });
    }
    if (key > max) max = key;
  }
  return max;
}

/**
 * A loop: keys 0, 1, …, length − 1 requested in order, over and over. With a cache smaller
 * than the loop this is LRU's worst case: every key is evicted just before it is needed
 * again, so LRU hits 0%, while a policy that keeps a fixed subset hits about
 * capacity / length, which is also what Bélády achieves.
 *
 * @example
 * loopTrace({ length: 3, requests: 7 }); // Int32Array [0, 1, 2, 0, 1, 2, 0]
 */
import { requireInteger } from "../errors.ts";
import { MAX_KEY_ID } from "./trace-keys.ts";
import { MAX_TRACE_REQUESTS } from "./zipf-trace.ts";

export interface LoopTraceOptions {
  /** Distinct keys in the loop. */
  readonly length: number;
  readonly requests: number;
}

export function loopTrace(options: LoopTraceOptions): Int32Array {
  requireInteger("length", options.length, 1, MAX_KEY_ID + 1);
  requireInteger("requests", options.requests, 0, MAX_TRACE_REQUESTS);
  const trace = new Int32Array(options.requests);
  for (let i = 0; i < trace.length; i++) trace[i] = i % options.length;
  return trace;
}

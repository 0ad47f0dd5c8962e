/**
 * The registry: every algorithm by name, each the one object its file exports
 * (`tokenBucket`, `gcra`, …), all implementing `Algorithm` from algorithm.ts. A new
 * algorithm is one file, one `AlgorithmName`, one `Limit` variant and one line here.
 *
 * @example
 * const { allowed, state } = algorithms["token-bucket"].decide(undefined, 0, limit, 1);
 */
import type { Algorithm, AlgorithmName, LimitOf } from "./algorithm.ts";
import { type FixedWindowState, fixedWindow } from "./fixed-window.ts";
import { type GcraState, gcra } from "./gcra.ts";
import { type LeakyBucketState, leakyBucket } from "./leaky-bucket.ts";
import { type SlidingWindowCounterState, slidingWindowCounter } from "./sliding-window-counter.ts";
import { type SlidingWindowLogState, slidingWindowLog } from "./sliding-window-log.ts";
import { type TokenBucketState, tokenBucket } from "./token-bucket.ts";

export interface StateByAlgorithm {
  "token-bucket": TokenBucketState;
  "fixed-window": FixedWindowState;
  "sliding-window-log": SlidingWindowLogState;
  "sliding-window-counter": SlidingWindowCounterState;
  "leaky-bucket": LeakyBucketState;
  gcra: GcraState;
}

export type AlgorithmFor<N extends AlgorithmName> = Algorithm<LimitOf<N>, StateByAlgorithm[N]>;

export const algorithms: { readonly [N in AlgorithmName]: AlgorithmFor<N> } = {
  "token-bucket": tokenBucket,
  "fixed-window": fixedWindow,
  "sliding-window-log": slidingWindowLog,
  "sliding-window-counter": slidingWindowCounter,
  "leaky-bucket": leakyBucket,
  gcra,
};

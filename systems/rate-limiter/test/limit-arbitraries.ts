/**
 * Small limits with short windows and fast rates, for property tests of the scripts and
 * their twins: a few ms of engine time (real or manual) change decisions.
 */
import fc from "fast-check";
import type { AlgorithmName, Limit } from "../src/domain/algorithm.ts";

export const limitArbitraries: Record<AlgorithmName, fc.Arbitrary<Limit>> = {
  "token-bucket": fc.record({
    algorithm: fc.constant("token-bucket" as const),
    capacity: fc.integer({ min: 1, max: 6 }),
    ratePerS: fc.constantFrom(0.5, 100 / 60, 200, 1_000 / 3),
  }),
  "fixed-window": fc.record({
    algorithm: fc.constant("fixed-window" as const),
    limit: fc.integer({ min: 1, max: 6 }),
    windowMs: fc.constantFrom(3, 10, 25, 60_000),
  }),
  "sliding-window-log": fc.record({
    algorithm: fc.constant("sliding-window-log" as const),
    limit: fc.integer({ min: 1, max: 6 }),
    windowMs: fc.constantFrom(3, 10, 25, 60_000),
  }),
  "sliding-window-counter": fc.record({
    algorithm: fc.constant("sliding-window-counter" as const),
    limit: fc.integer({ min: 1, max: 6 }),
    windowMs: fc.constantFrom(3, 10, 25, 60_000),
  }),
  "leaky-bucket": fc.record({
    algorithm: fc.constant("leaky-bucket" as const),
    queueCapacity: fc.integer({ min: 1, max: 6 }),
    ratePerS: fc.constantFrom(0.5, 100 / 60, 200, 1_000 / 3),
  }),
  gcra: fc.record({
    algorithm: fc.constant("gcra" as const),
    burst: fc.integer({ min: 1, max: 6 }),
    ratePerS: fc.constantFrom(0.5, 100 / 60, 200, 1_000 / 3),
  }),
};

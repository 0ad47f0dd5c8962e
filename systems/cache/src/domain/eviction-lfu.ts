/**
 * Approximate LFU's score (CA-11): 255 minus the decayed Morris counter, so the pool's
 * best candidate is the least frequently used key among those sampled. Decay is applied
 * when comparing, without writing the entry, as Redis's `LFUDecrAndReturn` does.
 *
 * @example
 * lfuScore(lfuInitial(0), 0, defaultLfuParams); // 250 (255 − 5)
 */
import { type LfuParams, lfuDecayed, MAX_LFU } from "./lfu-counter.ts";

export function lfuScore(access: number, nowMs: number, params: LfuParams): number {
  return MAX_LFU - lfuDecayed(access, nowMs, params);
}

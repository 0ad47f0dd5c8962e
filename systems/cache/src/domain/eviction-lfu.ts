/**
 * Approximate LFU's score (CA-11): 255 minus the decayed Morris counter, so the pool's
 * best candidate is the least frequently used key among those sampled. Decay is applied
 * when comparing, without writing the entry, as Redis's `LFUDecrAndReturn` does.
 *
 * @example
 * lfuScore(lfuInitial(0), 0, defaultLfuParams); // 250 (255 − 5)
 */
import { LFU_MAX, type LfuParams, lfuDecayed } from "./lfu-counter.ts";

export function lfuScore(access: number, nowMs: number, params: LfuParams): number {
  return LFU_MAX - lfuDecayed(access, nowMs, params);
}

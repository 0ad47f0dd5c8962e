/**
 * allkeys-random and volatile-random: no score, no pool — one uniformly random key of
 * the bag. The baseline that sampled LRU/LFU must beat (CA-11, CA-24).
 *
 * @example
 * randomVictim(ttlBag, rng); // some key with a TTL, or undefined when none has one
 */
import type { RandomSource } from "@casebook/kit/random";
import type { CacheEntry } from "./cache-entry.ts";
import type { EntryBag } from "./entry-bag.ts";

export function randomVictim(bag: EntryBag, random: RandomSource): CacheEntry | undefined {
  return bag.pick(random);
}

/**
 * allkeys-random and volatile-random: no score, no pool — one uniformly random key of
 * the bag. The baseline that sampled LRU/LFU must beat (CA-11, CA-24).
 *
 * @example
 * randomVictim(keyspace, "ttl", rng); // some key with a TTL, or undefined when none has one
 */
import type { RandomSource } from "@casebook/kit/random";
import type { CandidateKeys, EvictionCandidates } from "./eviction-policy.ts";

export function randomVictim(
  source: EvictionCandidates,
  keys: CandidateKeys,
  random: RandomSource,
): string | undefined {
  return source.count(keys) === 0 ? undefined : source.keyOf(source.sample(keys, random));
}

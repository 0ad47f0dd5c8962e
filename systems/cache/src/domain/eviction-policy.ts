/**
 * The maxmemory policies Redis offers, by name, and what each one means for the
 * evictor: which keys are candidates (`all` keys or only `volatile` ones, those with a
 * TTL) and how they are ranked (`lru`, `lfu`, `ttl`, `random`), or `none` for
 * noeviction (a write that does not fit gets -OOM). `allkeys-w-tinylfu` is this node's own
 * addition (CA-24): not sampled, the keyspace delegates it to `eviction-w-tinylfu.ts`, whose
 * admission may evict the key a SET just wrote.
 *
 * @example
 * evictionPolicy("volatile-lru"); // { name: "volatile-lru", keys: "volatile", rank: "lru" }
 * isEvictionPolicyName("lru");     // false
 */
import type { RandomSource } from "@casebook/kit/random";

export const EVICTION_POLICY_NAMES = [
  "noeviction",
  "allkeys-lru",
  "volatile-lru",
  "allkeys-lfu",
  "volatile-lfu",
  "allkeys-random",
  "volatile-random",
  "volatile-ttl",
  "allkeys-w-tinylfu",
] as const;

export type EvictionPolicyName = (typeof EVICTION_POLICY_NAMES)[number];

export type EvictionRank = "none" | "lru" | "lfu" | "ttl" | "random" | "w-tinylfu";

export interface EvictionPolicy {
  readonly name: EvictionPolicyName;
  readonly keys: "all" | "volatile";
  readonly rank: EvictionRank;
}

const POLICIES: Readonly<Record<EvictionPolicyName, EvictionPolicy>> = {
  noeviction: { name: "noeviction", keys: "all", rank: "none" },
  "allkeys-lru": { name: "allkeys-lru", keys: "all", rank: "lru" },
  "volatile-lru": { name: "volatile-lru", keys: "volatile", rank: "lru" },
  "allkeys-lfu": { name: "allkeys-lfu", keys: "all", rank: "lfu" },
  "volatile-lfu": { name: "volatile-lfu", keys: "volatile", rank: "lfu" },
  "allkeys-random": { name: "allkeys-random", keys: "all", rank: "random" },
  "volatile-random": { name: "volatile-random", keys: "volatile", rank: "random" },
  "volatile-ttl": { name: "volatile-ttl", keys: "volatile", rank: "ttl" },
  "allkeys-w-tinylfu": { name: "allkeys-w-tinylfu", keys: "all", rank: "w-tinylfu" },
};

export function isEvictionPolicyName(name: string): name is EvictionPolicyName {
  return Object.hasOwn(POLICIES, name);
}

export function evictionPolicy(name: EvictionPolicyName): EvictionPolicy {
  return POLICIES[name];
}

/** Which keys a policy draws from: every key (allkeys-*) or those with a TTL (volatile-*). */
export type CandidateKeys = "all" | "ttl";

/**
 * What the evictor reads of the keyspace: records sampled by id (ids are dense but move when
 * a record is removed, so only keys are kept across evictions), their key and access fields.
 */
export interface EvictionCandidates {
  count(keys: CandidateKeys): number;
  /** A uniformly random record id among `keys` (count(keys) > 0). */
  sample(keys: CandidateKeys, random: RandomSource): number;
  keyOf(id: number): string;
  accessOf(id: number): number;
  expiresAtOf(id: number): number;
  /** Whether `key` is in the keyspace (and, for "ttl", has a TTL). */
  holds(key: string, keys: CandidateKeys): boolean;
}

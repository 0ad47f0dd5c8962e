/**
 * Hot-key replication (CA-18): consistent hashing spreads keys, not popularity, so one key
 * read by everyone saturates the one node that owns it. Writing the value under N names
 * (`event:42#1` … `event:42#8`) puts N copies on (up to) N nodes, and each reader picks one
 * copy at random: the key's load splits N ways, at the price of N writes per update and
 * copies that may briefly disagree (the TTL bounds that, as for any cached value).
 *
 * A key with a hash tag (`{event:42}:page`) hashes only its tag in a Redis Cluster, so a
 * plain suffix would leave every copy in one slot: there the suffix goes inside the tag
 * (`{event:42#3}:page`), which gives each copy its own slot.
 *
 * @example
 * replicaKeys("event:42", 3);                    // ["event:42#1", "event:42#2", "event:42#3"]
 * replicaKey("{event:42}:page", 2);              // "{event:42#2}:page"
 * pickReplicaKey("event:42", 8, systemRandom);   // one of event:42#1..#8
 */
import { hashTag } from "@casebook/kit/cluster-slot";
import { int, type RandomSource } from "@casebook/kit/random";
import { requireInteger } from "../errors.ts";

/** Bound on copies of one key: past this the writes cost more than the reads they spread. */
export const MAX_HOT_KEY_REPLICAS = 64;

/**
 * The name of copy `index` (1-based) of `key`.
 *
 * @example
 * replicaKey("event:42", 1); // "event:42#1"
 */
export function replicaKey(key: string, index: number): string {
  requireInteger("replica", index, 1, MAX_HOT_KEY_REPLICAS);
  const tag = hashTag(key);
  if (tag === key) return `${key}#${index}`;
  const open = key.indexOf("{");
  const close = open + 1 + tag.length;
  return `${key.slice(0, close)}#${index}${key.slice(close)}`;
}

/**
 * Every copy's name, for writes (and deletes on invalidation).
 *
 * @example
 * replicaKeys("event:42", 2); // ["event:42#1", "event:42#2"]
 */
export function replicaKeys(key: string, replicas: number): string[] {
  requireInteger("replicas", replicas, 1, MAX_HOT_KEY_REPLICAS);
  return Array.from({ length: replicas }, (_, i) => replicaKey(key, i + 1));
}

/**
 * One copy's name, uniformly at random, for a read.
 *
 * @example
 * pickReplicaKey("event:42", 8, seededRandom(1)); // e.g. "event:42#5"
 */
export function pickReplicaKey(key: string, replicas: number, random: RandomSource): string {
  requireInteger("replicas", replicas, 1, MAX_HOT_KEY_REPLICAS);
  return replicaKey(key, 1 + int(random, replicas));
}

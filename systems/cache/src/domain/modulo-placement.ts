/**
 * Placement by `hash(key) % N` (CA-10's counter-example): perfectly even and trivial to
 * compute, but the owner of almost every key changes with N. From 4 to 5 nodes a key
 * stays only if hash % 4 = hash % 5, which is hash % 20 ∈ {0, 1, 2, 3}: 4 in 20, so 80%
 * of the keys move. For a cache that is the same as losing 80% of the data at once.
 *
 * @example
 * moduloOwner(murmur3("event:42"), 4); // a node index in [0, 4)
 */
import { requireInteger } from "../errors.ts";

/** The node index (0..nodes−1) owning a key with this 32-bit hash. */
export function moduloOwner(hash: number, nodes: number): number {
  requireInteger("nodes", nodes, 1, 2 ** 31);
  return (hash >>> 0) % nodes;
}

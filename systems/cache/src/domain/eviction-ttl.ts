/**
 * volatile-ttl's score: the sooner a key expires, the better a victim it is (it was
 * going away anyway). Among keys with a TTL only.
 *
 * @example
 * ttlScore(1_000) > ttlScore(2_000); // true: the key expiring first goes first
 */
export function ttlScore(expiresAtMs: number): number {
  return -expiresAtMs;
}

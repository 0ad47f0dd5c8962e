/**
 * The MurmurHash3 finalizer (Austin Appleby's `fmix32`): two multiply-xorshift rounds in which
 * every input bit affects every output bit — a cheap, well-mixed 32-bit hash of a 32-bit
 * integer, and the round function of url-shortener's Feistel permutation. 0 maps to 0, which
 * callers needing a non-zero value must handle. kit's murmur3 finishes with it.
 *
 * @example
 * fmix32(1); // 0x514e28b7
 */
export function fmix32(h: number): number {
  let x = h;
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

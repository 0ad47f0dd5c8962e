/**
 * MurmurHash3 x86_32 (Austin Appleby), over the UTF-8 bytes of a string: a stable 32-bit
 * hash, the same in every language that implements the reference, so ring points and
 * sketch rows can be checked against other tools. Not cryptographic: an attacker who
 * knows the seed can build collisions (W-TinyLFU's admission guards against that).
 *
 * Shared: the cache's ring and sketches hash keys with it, metrics' series interner label bytes.
 *
 * @example
 * murmur3("hello");                          // 0x248bfa47
 * murmur3Range(bytes, start, end);           // of bytes[start, end), no subarray made
 */

import { fmix32 } from "./fmix32.ts";

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;
/** Strings longer than this many UTF-16 units are encoded into a fresh buffer, not the shared one. */
const MAX_SCRATCH_CHARS = 1_024;
const encoder = new TextEncoder();
// UTF-8 needs at most 3 bytes per UTF-16 unit; one shared buffer avoids an allocation per hash.
const scratch = new Uint8Array(MAX_SCRATCH_CHARS * 3);

function rotl32(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function scramble(k: number): number {
  return Math.imul(rotl32(Math.imul(k, C1), 15), C2);
}

function mixBlock(h: number, k: number): number {
  return (Math.imul(rotl32(h ^ scramble(k), 13), 5) + 0xe6546b64) | 0;
}

/**
 * MurmurHash3 x86_32 of `bytes[start, end)`, read in place.
 *
 * @example
 * murmur3Range(new TextEncoder().encode("[hello]"), 1, 6); // 0x248bfa47
 */
export function murmur3Range(bytes: Uint8Array, start: number, end: number, seed = 0): number {
  let h = seed | 0;
  const length = end - start;
  const blocks = start + (length & ~3);
  for (let i = start; i < blocks; i += 4) {
    h = mixBlock(h, bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
  }
  const remainder = length & 3;
  if (remainder > 0) {
    let tail = bytes[blocks]!;
    if (remainder > 1) tail |= bytes[blocks + 1]! << 8;
    if (remainder > 2) tail |= bytes[blocks + 2]! << 16;
    h ^= scramble(tail);
  }
  return fmix32(h ^ length);
}

/**
 * MurmurHash3 x86_32 of `bytes[0..length)`.
 *
 * @example
 * murmur3Bytes(new TextEncoder().encode("hello"), 5); // 0x248bfa47
 */
export function murmur3Bytes(bytes: Uint8Array, length: number, seed = 0): number {
  return murmur3Range(bytes, 0, length, seed);
}

/**
 * MurmurHash3 x86_32 of a latin1 string's bytes (one char per byte, as RESP keys are decoded),
 * read with charCodeAt: no encoding, no buffer. Equals `murmur3Bytes` of the same bytes.
 *
 * @example
 * murmur3Latin1("hello") === murmur3("hello"); // true for ASCII
 */
export function murmur3Latin1(text: string, seed = 0): number {
  let h = seed | 0;
  const length = text.length;
  const blocks = length & ~3;
  for (let i = 0; i < blocks; i += 4) {
    h = mixBlock(
      h,
      text.charCodeAt(i) |
        (text.charCodeAt(i + 1) << 8) |
        (text.charCodeAt(i + 2) << 16) |
        (text.charCodeAt(i + 3) << 24),
    );
  }
  const remainder = length & 3;
  if (remainder > 0) {
    let tail = text.charCodeAt(blocks);
    if (remainder > 1) tail |= text.charCodeAt(blocks + 1) << 8;
    if (remainder > 2) tail |= text.charCodeAt(blocks + 2) << 16;
    h ^= scramble(tail);
  }
  return fmix32(h ^ length);
}

/**
 * MurmurHash3 x86_32 of the UTF-8 encoding of `text`.
 *
 * @example
 * murmur3("The quick brown fox jumps over the lazy dog"); // 0x2e4ff723
 */
export function murmur3(text: string, seed = 0): number {
  if (text.length > MAX_SCRATCH_CHARS) {
    const bytes = encoder.encode(text);
    return murmur3Bytes(bytes, bytes.length, seed);
  }
  const { written } = encoder.encodeInto(text, scratch);
  return murmur3Bytes(scratch, written, seed);
}

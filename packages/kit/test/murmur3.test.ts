/**
 * MurmurHash3 x86_32: the reference vectors, the string and byte forms agreeing, and a range
 * read in place equal to the same bytes on their own.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { fmix32 } from "../src/fmix32.ts";
import { murmur3, murmur3Bytes, murmur3Latin1, murmur3Range } from "../src/murmur3.ts";

test("murmur3 matches the reference MurmurHash3_x86_32 vectors, over UTF-8", () => {
  assert.equal(murmur3(""), 0);
  assert.equal(murmur3("", 1), 0x514e28b7);
  assert.equal(murmur3("hello"), 0x248bfa47);
  assert.equal(murmur3("Hello, world!", 1234), 0xfaf6cdb3);
  assert.equal(murmur3("The quick brown fox jumps over the lazy dog"), 0x2e4ff723);
  assert.equal(fmix32(1), 0x514e28b7);
  assert.equal(murmur3Latin1("hello"), 0x248bfa47);
  // Up to 1,024 UTF-16 units a shared buffer is used, above it a fresh one: same result either way.
  for (const text of ["é€😀".repeat(256), "é€😀".repeat(257)]) {
    const bytes = new TextEncoder().encode(text);
    assert.equal(murmur3(text, 9), murmur3Bytes(bytes, bytes.length, 9), `${text.length} units`);
  }
});

test("murmur3Range hashes bytes[start, end) in place as murmur3Bytes hashes them alone", () => {
  assert.equal(murmur3Range(new TextEncoder().encode("[hello]"), 1, 6), 0x248bfa47);
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(), fc.nat(), fc.nat(), (bytes, a, b, seed) => {
      const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
      const end = start + (bytes.length === 0 ? 0 : b % (bytes.length - start + 1));
      const alone = bytes.slice(start, end);
      assert.equal(murmur3Range(bytes, start, end, seed), murmur3Bytes(alone, alone.length, seed));
    }),
  );
});

/**
 * The code mechanisms as pure functions: Base62 and the code space (US-02), the keyed
 * permutation — bijective, invertible, order-hiding (US-06) — and the block allocator's
 * one-counter-call-per-block arithmetic (US-05's local part; the race is code-race.test.ts).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { BASE62_ALPHABET, CODE_SPACE, decodeBase62, encodeBase62 } from "../src/domain/base62.ts";
import { BlockAllocator, CounterExhaustedError, type CounterPort } from "../src/domain/counter-blocks.ts";
import { CounterCodes } from "../src/domain/counter-codes.ts";
import { FeistelPermutation, KEY_BYTES } from "../src/domain/feistel-permutation.ts";

function keyOf(seed: number): Uint8Array {
  const rng = seededRandom(`us-key-${seed}`);
  return Uint8Array.from({ length: KEY_BYTES }, () => Math.floor(rng.next() * 256));
}

/** A counter in memory with the port's contract: one add, the value after it. */
function memoryCounter(): CounterPort & { calls: number } {
  let value = 0;
  const counter = {
    calls: 0,
    async reserve(count: number) {
      counter.calls += 1;
      value += count;
      return value;
    },
  };
  return counter;
}

test("US-02 Base62 is [a-z, A-Z, 0-9] and 7 characters give 62^7 = 3,521,614,606,208 codes", () => {
  assert.equal(BASE62_ALPHABET, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
  assert.equal(new Set(BASE62_ALPHABET).size, 62);
  assert.equal(CODE_SPACE, 3_521_614_606_208);
  assert.equal(encodeBase62(0), "aaaaaaa");
  assert.equal(encodeBase62(CODE_SPACE - 1), "9999999");
  assert.equal(decodeBase62("9999999"), CODE_SPACE - 1);
  for (const n of [1, 61, 62, 3_843, 916_132_831, 2 ** 40]) assert.equal(decodeBase62(encodeBase62(n)), n);
  assert.equal(decodeBase62("aaaaaa"), undefined, "6 characters is not a code");
  assert.equal(decodeBase62("aaaaaa-"), undefined, "- is not Base62");
  assert.throws(() => encodeBase62(CODE_SPACE), /outside/);
});

test("US-06 the permutation is a bijection: every number of a 62^3 domain maps to a distinct number and back", () => {
  const domain = 62 ** 3;
  const permutation = new FeistelPermutation(keyOf(1), domain);
  const hit = new Uint8Array(domain);
  for (let n = 0; n < domain; n++) {
    const x = permutation.permute(n);
    assert.ok(x >= 0 && x < domain);
    assert.equal(hit[x], 0, `two numbers map to ${x}`);
    hit[x] = 1;
    assert.equal(permutation.invert(x), n);
  }
});

test("US-06 over 62^7, sampled ranges (start, middle, end, random) give distinct codes that invert to their numbers", () => {
  const permutation = new FeistelPermutation(keyOf(2));
  const rng = seededRandom("us-06-ranges");
  const starts = [
    0,
    Math.floor(CODE_SPACE / 2),
    CODE_SPACE - 20_000,
    Math.floor(rng.next() * (CODE_SPACE - 20_000)),
  ];
  const codes = new Set<string>();
  for (const start of starts) {
    for (let n = start; n < start + 20_000; n++) {
      const x = permutation.permute(n);
      assert.ok(x >= 0 && x < CODE_SPACE);
      codes.add(encodeBase62(x));
      assert.equal(permutation.invert(x), n);
    }
  }
  assert.equal(codes.size, starts.length * 20_000);
});

test("US-06 consecutive numbers give unrelated codes: order is not revealed, and the key decides the codes", () => {
  const permutation = new FeistelPermutation(keyOf(3));
  const images = Array.from({ length: 10_000 }, (_, n) => permutation.permute(n));
  // Consecutive inputs: images go up about half the time (an order-preserving map: always).
  let rises = 0;
  for (let i = 1; i < images.length; i++) if (images[i]! > images[i - 1]!) rises += 1;
  assert.ok(rises > 4_700 && rises < 5_300, `${rises} rises of 9,999`);
  // The images spread over the whole space, not the first 10,000 numbers.
  const spread = Math.max(...images) - Math.min(...images);
  assert.ok(spread > CODE_SPACE * 0.99, `spread ${spread}`);
  // Neighbours share no more of their first characters than chance allows (1/62 per character).
  let samePrefix = 0;
  for (let i = 1; i < images.length; i++) {
    if (encodeBase62(images[i]!)[0] === encodeBase62(images[i - 1]!)[0]) samePrefix += 1;
  }
  assert.ok(samePrefix < 400, `${samePrefix} neighbours share a first character`);
  const other = new FeistelPermutation(keyOf(4));
  let equal = 0;
  for (let n = 0; n < 10_000; n++) if (other.permute(n) === images[n]) equal += 1;
  assert.equal(equal, 0, "another key gives other codes");
});

test("US-05 a writer calls the counter once per block of 1,000 and makes the rest locally", async () => {
  const counter = memoryCounter();
  const codes = new CounterCodes(
    new BlockAllocator({ counter, blockSize: 1_000, limit: CODE_SPACE }),
    new FeistelPermutation(keyOf(5)),
  );
  const made = new Set<string>();
  for (let i = 0; i < 5_500; i++) made.add(await codes.next());
  assert.equal(made.size, 5_500);
  assert.equal(counter.calls, 6);
  assert.deepEqual(codes.stats, { reservations: 6, issued: 5_500 });
  for (const code of made) assert.ok(codes.numberOf(code)! < 6_000);
});

test("US-05 concurrent callers of one writer share one reservation in flight and get distinct numbers", async () => {
  const counter = memoryCounter();
  const blocks = new BlockAllocator({ counter, blockSize: 100, limit: CODE_SPACE });
  const numbers = await Promise.all(Array.from({ length: 250 }, () => blocks.next()));
  assert.equal(new Set(numbers).size, 250);
  assert.equal(counter.calls, 3);
});

test("a counter past the code space refuses to hand out a number instead of wrapping around", async () => {
  const counter = memoryCounter();
  const blocks = new BlockAllocator({ counter, blockSize: 10, limit: 25 });
  for (let i = 0; i < 20; i++) await blocks.next();
  await assert.rejects(blocks.next(), CounterExhaustedError);
});

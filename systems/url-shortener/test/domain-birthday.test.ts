/**
 * The hash scheme against the counter scheme (US-03, US-04) and the seed's estimates (US-17),
 * reproduced by formula and by simulation. The full-size simulation hashes distinct URLs with
 * MD5, keeps 7 Base62 characters and stops at the first repeat; it is deterministic (the URLs
 * are fixed), so its result is a fixed number, asserted to lie where the formula puts it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { CODE_SPACE } from "../src/domain/base62.ts";
import {
  collisionProbability,
  collisionProbabilityExact,
  expectedFirstCollision,
  firstRepeat,
  urlsForCollisionProbability,
} from "../src/domain/birthday.ts";
import { BlockAllocator } from "../src/domain/counter-blocks.ts";
import { CounterCodes } from "../src/domain/counter-codes.ts";
import {
  codeSpace,
  originRequestsPerSecond,
  readsPerSecond,
  writesPerSecond,
  yearsToExhaust,
} from "../src/domain/estimates.ts";
import { FeistelPermutation, KEY_BYTES } from "../src/domain/feistel-permutation.ts";
import { hashCode, truncatedHashCode } from "../src/domain/hash-codes.ts";

const urlOf = (i: number) => `https://example.com/page/${i}`;
/** Where the full-size MD5 simulation meets its first repeat (see the US-03 test): draws 1-based. */
const MD5_FIRST_REPEAT_DRAW = 1_558_453;

test("US-03 birthday bound by formula: 23 people > 50%; 7 Base62 characters collide near 2 million URLs", () => {
  assert.ok(collisionProbabilityExact(23, 365) > 0.5);
  assert.ok(collisionProbabilityExact(22, 365) < 0.5);
  assert.equal(Math.round(collisionProbabilityExact(23, 365) * 1000) / 1000, 0.507);
  const half = urlsForCollisionProbability(0.5, CODE_SPACE);
  assert.ok(half > 2.2e6 && half < 2.22e6, `${half}`);
  const expected = expectedFirstCollision(CODE_SPACE);
  assert.ok(expected > 2.35e6 && expected < 2.36e6, `${expected}`);
  // A millionth of the space: long before it looks full.
  assert.ok(half / CODE_SPACE < 1e-6);
  assert.ok(Math.abs(collisionProbability(half, CODE_SPACE) - 0.5) < 1e-6);
});

test("US-03 birthday bound by simulation: small spaces, 400 trials each, first repeat ≈ √(πN/2)", () => {
  const rng = seededRandom("us-03-small");
  for (const space of [62 ** 3, 62 ** 4]) {
    let sum = 0;
    const trials = 400;
    for (let t = 0; t < trials; t++) sum += firstRepeat(() => Math.floor(rng.next() * space), space + 1)!;
    const mean = sum / trials;
    const expected = expectedFirstCollision(space);
    // The first repeat's spread is ~0.52·mean; over 400 trials the mean's error is ~2.6%: 10% is 4σ.
    assert.ok(
      Math.abs(mean - expected) / expected < 0.1,
      `space ${space}: mean ${mean}, formula ${expected}`,
    );
  }
});

test("US-03 birthday bound by simulation: MD5 truncated to 7 Base62 characters repeats first at URL 1,558,453", () => {
  const draw = firstRepeat((i) => truncatedHashCode(urlOf(i)), 10_000_000);
  assert.equal(draw, MD5_FIRST_REPEAT_DRAW);
  // Between the 1% and 99% points of the formula's distribution (266 thousand .. 5.7 million).
  assert.ok(draw! > urlsForCollisionProbability(0.01, CODE_SPACE));
  assert.ok(draw! < urlsForCollisionProbability(0.99, CODE_SPACE));
});

test("US-04 the hash scheme pays a lookup per code and one more per collision; the counter scheme pays none", async () => {
  // The URL of US-03's first repeat, and the earlier URL it collides with.
  const late = MD5_FIRST_REPEAT_DRAW - 1;
  const lateCode = truncatedHashCode(urlOf(late));
  let early = -1;
  for (let i = 0; i < late && early < 0; i++) if (truncatedHashCode(urlOf(i)) === lateCode) early = i;
  assert.ok(early >= 0);
  const taken = new Set<string>();
  let lookups = 0;
  const claim = async (code: string) => {
    lookups += 1;
    if (taken.has(code)) return false;
    taken.add(code);
    return true;
  };
  assert.deepEqual(await hashCode(urlOf(early), { claim }), { code: lateCode, lookups: 1 });
  const salted = await hashCode(urlOf(late), { claim });
  assert.equal(salted.lookups, 2, "the collision costs a second, salted attempt");
  assert.notEqual(salted.code, lateCode);
  assert.equal(lookups, 3, "the store saw every attempt: 1 + (1 + 1 collision)");

  // A crowded store: with a fraction f of a small space taken, lookups per code → 1/(1−f).
  const rng = seededRandom("us-04-crowded");
  const crowded = new Set<number>();
  const space = 62 ** 3;
  while (crowded.size < space / 2) crowded.add(Math.floor(rng.next() * space));
  let attempts = 0;
  for (let i = 0; i < 2_000; i++) {
    for (let a = 1; a <= 64; a++) {
      attempts += 1;
      if (!crowded.has(Math.floor(rng.next() * space))) break;
    }
  }
  const perCode = attempts / 2_000;
  assert.ok(perCode > 1.85 && perCode < 2.15, `${perCode} lookups per code at half full (formula 2)`);

  // The counter scheme: 10,000 codes, 0 lookups, 10 counter calls.
  let counterCalls = 0;
  let value = 0;
  const key = new Uint8Array(KEY_BYTES).fill(7);
  const codes = new CounterCodes(
    new BlockAllocator({
      counter: {
        reserve: async (n) => {
          counterCalls += 1;
          value += n;
          return value;
        },
      },
      limit: CODE_SPACE,
    }),
    new FeistelPermutation(key),
  );
  const made = new Set<string>();
  for (let i = 0; i < 10_000; i++) made.add(await codes.next());
  assert.equal(made.size, 10_000);
  assert.equal(counterCalls, 10);
});

test("US-17 estimates: 100 M links a month ≈ 38.6 writes/s; ×100 ≈ 3,858 reads/s; a 95% edge leaves 5% to the origin", () => {
  const writes = writesPerSecond(100e6);
  assert.equal(Math.round(writes * 10) / 10, 38.6);
  const reads = readsPerSecond(writes, 100);
  assert.equal(Math.round(reads), 3_858);
  assert.equal(Math.round(originRequestsPerSecond(reads, 0.95)), 193);
  assert.equal(codeSpace(), CODE_SPACE);
  // The space at that rate lasts ~2,900 years.
  assert.ok(yearsToExhaust(CODE_SPACE, 100e6) > 2_900);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  int,
  pick,
  type RandomSource,
  seededRandom,
  shuffle,
  systemRandom,
  Xoshiro128,
} from "../src/random.ts";

/** Pearson chi-square statistic of observed counts against a uniform expectation. */
function chiSquare(counts: readonly number[]): number {
  const total = counts.reduce((a, b) => a + b, 0);
  const expected = total / counts.length;
  return counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
}

test("xoshiro128** core matches the reference implementation's output for state [1, 2, 3, 4]", () => {
  const rng = Xoshiro128.fromState([1, 2, 3, 4]);
  const outputs = Array.from({ length: 10 }, () => rng.nextUint32());
  assert.deepEqual(
    outputs,
    [11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849, 3729100597, 4258142804],
  );
});

test("the same seed gives the same sequence; different seeds give different ones", () => {
  for (const seed of [0, 1, -1, 42, 2 ** 40, Number.MAX_SAFE_INTEGER, 0.5, "", "webhooks", "ñ-🙂"]) {
    const a = seededRandom(seed);
    const b = seededRandom(seed);
    const seqA = Array.from({ length: 50 }, () => a.next());
    const seqB = Array.from({ length: 50 }, () => b.next());
    assert.deepEqual(seqA, seqB, `seed ${String(seed)}`);
  }
  const firsts = new Set(
    [0, 1, 2, 3, -1, 2 ** 32, 2 ** 32 + 1, "0", "1", "a", "b", 0.5].map((s) => seededRandom(s).next()),
  );
  assert.equal(firsts.size, 12, "nearby or type-different seeds must not collide");
});

test("state() snapshots resume the same sequence", () => {
  const rng = seededRandom("resume");
  rng.next();
  const resumed = Xoshiro128.fromState(rng.state());
  assert.deepEqual(
    Array.from({ length: 5 }, () => rng.next()),
    Array.from({ length: 5 }, () => resumed.next()),
  );
});

test("an all-zero state and a non-finite seed are refused", () => {
  assert.throws(() => Xoshiro128.fromState([0, 0, 0, 0]), RangeError);
  assert.throws(() => seededRandom(Number.NaN), /seed must be finite/);
  assert.throws(() => seededRandom(Number.POSITIVE_INFINITY), /seed must be finite/);
});

test("next() stays in [0, 1) and is uniform across 20 buckets (chi-square, 100k draws)", () => {
  const rng = seededRandom(2024);
  const counts = new Array<number>(20).fill(0);
  for (let i = 0; i < 100_000; i++) {
    const x = rng.next();
    assert.ok(x >= 0 && x < 1, `out of range: ${x}`);
    counts[Math.floor(x * 20)]!++;
  }
  // 43.82 is the 0.999 quantile of chi-square with 19 degrees of freedom.
  assert.ok(chiSquare(counts) < 43.82, `chi-square ${chiSquare(counts)} for ${counts.join(",")}`);
});

test("consecutive outputs are not correlated (lag-1 serial correlation near zero)", () => {
  const rng = seededRandom("serial");
  const n = 50_000;
  const xs = Array.from({ length: n }, () => rng.next());
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    den += (xs[i]! - mean) ** 2;
    if (i > 0) num += (xs[i]! - mean) * (xs[i - 1]! - mean);
  }
  assert.ok(Math.abs(num / den) < 0.02, `lag-1 correlation ${num / den}`);
  assert.ok(Math.abs(mean - 0.5) < 0.01, `mean ${mean}`);
});

test("int() covers exactly [0, max) uniformly and validates its bound", () => {
  const rng = seededRandom(7);
  const counts = new Array<number>(7).fill(0);
  for (let i = 0; i < 70_000; i++) counts[int(rng, 7)]!++;
  assert.ok(counts.every((c) => c > 0));
  // 24.10 is the 0.9995 quantile of chi-square with 6 degrees of freedom.
  assert.ok(chiSquare(counts) < 24.1, `chi-square ${chiSquare(counts)}`);
  assert.equal(int(rng, 1), 0);
  const big = int(rng, Number.MAX_SAFE_INTEGER);
  assert.ok(Number.isSafeInteger(big) && big >= 0);
  for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
    assert.throws(() => int(rng, bad), /maxExclusive/, String(bad));
  }
});

test("int() never returns the bound even from a source that breaks its contract", () => {
  const broken: RandomSource = { next: () => 1 };
  assert.equal(int(broken, 5), 4);
});

test("pick() returns members uniformly and refuses an empty list", () => {
  const rng = seededRandom("pick");
  const items = ["a", "b", "c", "d"] as const;
  const counts = new Map<string, number>(items.map((k) => [k, 0]));
  for (let i = 0; i < 40_000; i++) {
    const chosen = pick(rng, items);
    counts.set(chosen, counts.get(chosen)! + 1);
  }
  // 16.27 is the 0.999 quantile of chi-square with 3 degrees of freedom.
  assert.ok(chiSquare([...counts.values()]) < 16.27);
  assert.throws(() => pick(rng, []), /at least one item/);
});

test("shuffle() permutes in place, keeps every element, and makes all 3! orders equally likely", () => {
  const rng = seededRandom("shuffle");
  const original = Array.from({ length: 100 }, (_, i) => i);
  const copy = [...original];
  const result = shuffle(rng, copy);
  assert.equal(result, copy, "returns the same array");
  assert.notDeepEqual(copy, original);
  assert.deepEqual(
    [...copy].sort((a, b) => a - b),
    original,
  );

  const counts = new Map<string, number>();
  for (let i = 0; i < 60_000; i++) {
    const key = shuffle(rng, ["x", "y", "z"]).join("");
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  assert.equal(counts.size, 6);
  // 20.52 is the 0.999 quantile of chi-square with 5 degrees of freedom.
  assert.ok(chiSquare([...counts.values()]) < 20.52, JSON.stringify(Object.fromEntries(counts)));
  assert.deepEqual(shuffle(rng, []), []);
  assert.deepEqual(shuffle(rng, [1]), [1]);
});

test("the same seed shuffles the same way", () => {
  const a = shuffle(
    seededRandom(99),
    Array.from({ length: 20 }, (_, i) => i),
  );
  const b = shuffle(
    seededRandom(99),
    Array.from({ length: 20 }, (_, i) => i),
  );
  assert.deepEqual(a, b);
});

test("systemRandom is a RandomSource in [0, 1)", () => {
  for (let i = 0; i < 1_000; i++) {
    const x = systemRandom.next();
    assert.ok(x >= 0 && x < 1);
  }
});

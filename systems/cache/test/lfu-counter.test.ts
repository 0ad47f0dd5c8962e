/**
 * CA-11 The LFU counter is Redis's Morris counter: logarithmic growth measured against
 * the table Redis publishes in redis.conf for lfu-log-factor 10 (100 hits → 10,
 * 1 000 → 18, 100 000 → 142, 1 000 000 → 255), decay of one per idle minute, and new
 * keys at 5. Means over seeds: the counter is probabilistic by design.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import {
  defaultLfuParams,
  LFU_INIT_VAL,
  lfuCounterOf,
  lfuDecayed,
  lfuInitial,
  lfuLogIncrement,
  lfuTouch,
} from "../src/domain/lfu-counter.ts";

const START_MS = 1_700_000_000_000;

function counterAfter(hits: number, seed: number): number {
  const random = seededRandom(seed);
  let access = lfuInitial(START_MS);
  for (let i = 0; i < hits; i++) access = lfuTouch(access, START_MS, defaultLfuParams, random);
  return lfuCounterOf(access);
}

function meanCounter(hits: number, seeds: number): number {
  let sum = 0;
  for (let seed = 1; seed <= seeds; seed++) sum += counterAfter(hits, seed);
  return sum / seeds;
}

describe("LFU counter", () => {
  // [hits, Redis's table value, accepted range for the mean over seeds]
  const table: Array<[number, number, [number, number], number]> = [
    [100, 10, [8, 12], 40],
    [1_000, 18, [16, 22], 40],
    [100_000, 142, [132, 155], 8],
    [1_000_000, 255, [255, 255], 2],
  ];
  for (const [hits, redis, [low, high], seeds] of table) {
    test(`CA-11 lfu-log-factor 10: ${hits.toLocaleString("en-US")} hits → ~${redis} (Redis's table)`, () => {
      const mean = meanCounter(hits, seeds);
      assert.ok(mean >= low && mean <= high, `mean counter ${mean} outside [${low}, ${high}]`);
    });
  }

  test("CA-11 new keys start at 5, so they are not the first evicted before a single read", () => {
    assert.equal(lfuCounterOf(lfuInitial(START_MS)), LFU_INIT_VAL);
  });

  test("CA-11 the counter decays by one per idle minute (lfu-decay-time 1), floored at 0", () => {
    let access = lfuInitial(START_MS);
    const random = seededRandom(1);
    for (let i = 0; i < 1_000; i++) access = lfuTouch(access, START_MS, defaultLfuParams, random);
    const counter = lfuCounterOf(access);
    assert.equal(lfuDecayed(access, START_MS + 3 * 60_000, defaultLfuParams), counter - 3);
    assert.equal(lfuDecayed(access, START_MS + 10_000 * 60_000, defaultLfuParams), 0);
    assert.equal(
      lfuDecayed(access, START_MS + 3 * 60_000, { logFactor: 10, decayTimeMin: 0 }),
      counter,
      "0 = no decay",
    );
    assert.equal(lfuDecayed(access, START_MS + 6 * 60_000, { logFactor: 10, decayTimeMin: 2 }), counter - 3);
  });

  test("an increment's probability is 1 / ((counter − 5) · factor + 1)", () => {
    const always = { next: () => 0.999_999 };
    const never = { next: () => 0 };
    assert.equal(lfuLogIncrement(5, 10, always), 6, "at the initial value every hit counts");
    assert.equal(lfuLogIncrement(15, 10, { next: () => 1 / 101 - 1e-9 }), 16, "p = 1/101 at 15");
    assert.equal(lfuLogIncrement(15, 10, { next: () => 1 / 101 }), 15);
    assert.equal(lfuLogIncrement(255, 10, never), 255, "saturates at 255");
  });
});

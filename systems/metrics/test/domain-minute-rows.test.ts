/**
 * The rollup builder's batch rows in columns (`domain/minute-rows.ts`): whatever way the stream
 * cut a series' samples into messages, the rows are the 1 min windows of its raw samples — the
 * same min, max, sum, count, first and last sample and reset carry as `rollupColumns` over them —
 * and a window whose samples came out of order keeps no counter, as merging two windows does.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MinuteRows } from "../src/domain/minute-rows.ts";
import { ONE_MINUTE_MS, rollupColumns } from "../src/domain/rollup.ts";
import { STALE_NAN } from "../src/domain/staleness.ts";

const T0 = Date.UTC(2026, 0, 1);

/** A seeded counter with resets and a staleness marker now and then, one sample every 7 s. */
function counterSamples(seed: number, count: number): { timestamps: Float64Array; values: Float64Array } {
  let state = seed;
  const next = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state / 2 ** 31;
  };
  const timestamps = new Float64Array(count);
  const values = new Float64Array(count);
  let v = 0;
  for (let i = 0; i < count; i++) {
    timestamps[i] = T0 + i * 7_000 + Math.floor(next() * 3_000);
    v = next() < 0.05 ? next() * 5 : v + next() * 10; // a reset, or a rise
    values[i] = next() < 0.03 ? STALE_NAN : v;
  }
  return { timestamps, values };
}

/** The rows of one series, by minute, as plain values (the counter fields null when unknown). */
function rowsOf(rows: MinuteRows, key: string) {
  const out = new Map<number, Record<string, number | null>>();
  for (let r = 0; r < rows.length; r++) {
    if (rows.keys[rows.series[r]!] !== key) continue;
    const known = rows.counterKnown[r] === 1;
    out.set(rows.t[r]!, {
      min: rows.min[r]!,
      max: rows.max[r]!,
      sum: rows.sum[r]!,
      count: rows.count[r]!,
      firstT: known ? rows.firstT[r]! : null,
      firstV: known ? rows.firstV[r]! : null,
      lastT: known ? rows.lastT[r]! : null,
      lastV: known ? rows.lastV[r]! : null,
      resetCarry: known ? rows.resetCarry[r]! : null,
    });
  }
  return out;
}

test("MT-10 MT-11 a series cut into messages anywhere folds into the 1 min windows of its raw samples, counter fields included, late samples left out", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const { timestamps, values } = counterSamples(seed, 400);
    const minT = timestamps[37]!; // the first 37 samples are late
    const expected = new Map(
      rollupColumns(timestamps, values, 0, timestamps.length, ONE_MINUTE_MS, minT).map((p) => [
        p.t,
        {
          min: p.min,
          max: p.max,
          sum: p.sum,
          count: p.count,
          firstT: p.counter!.firstT,
          firstV: p.counter!.firstV,
          lastT: p.counter!.lastT,
          lastV: p.counter!.lastV,
          resetCarry: p.counter!.resetCarry,
        },
      ]),
    );
    // Cut points drawn from the seed: messages of 1 to 25 samples, minutes split across them.
    const rows = new MinuteRows();
    let points = 0;
    for (let from = 0, seq = 1; from < timestamps.length; seq++) {
      const to = Math.min(timestamps.length, from + 1 + ((seed * 7 + seq * 13) % 25));
      points += rows.fold("acme", "cpu", seq, timestamps, values, from, to, minT);
      from = to;
    }
    assert.deepEqual(rowsOf(rows, "cpu"), expected, `seed ${seed}`);
    assert.ok(
      points >= expected.size,
      "every row counted by the message that made it, and again by each one that added to it",
    );
  }
});

test("MT-10 series and tenants keep rows of their own; a message's points are the rows it touched for the first time", () => {
  const rows = new MinuteRows();
  const t = Float64Array.of(T0 + 1_000, T0 + 30_000, T0 + 61_000);
  const v = Float64Array.of(1, 2, 3);
  assert.equal(rows.fold("acme", "a", 1, t, v, 0, 3, Number.NEGATIVE_INFINITY), 2, "two minutes");
  assert.equal(rows.fold("beta", "a", 1, t, v, 0, 2, Number.NEGATIVE_INFINITY), 1, "another tenant's series");
  const later = Float64Array.of(T0 + 62_000, T0 + 125_000);
  assert.equal(rows.fold("acme", "a", 2, later, Float64Array.of(4, 5), 0, 2, Number.NEGATIVE_INFINITY), 2);
  assert.equal(rows.length, 4);
  assert.equal(rows.seriesCount, 2);
  assert.deepEqual(rowsOf(rows, "a").get(T0 + ONE_MINUTE_MS), {
    min: 3,
    max: 4,
    sum: 7,
    count: 2,
    firstT: T0 + 61_000,
    firstV: 3,
    lastT: T0 + 62_000,
    lastV: 4,
    resetCarry: 0,
  });
});

test("MT-11 a minute whose samples arrive out of order across messages keeps min, max, sum and count, and no counter fields", () => {
  const rows = new MinuteRows();
  rows.fold(
    "acme",
    "c",
    1,
    Float64Array.of(T0 + 40_000),
    Float64Array.of(10),
    0,
    1,
    Number.NEGATIVE_INFINITY,
  );
  rows.fold("acme", "c", 2, Float64Array.of(T0 + 20_000), Float64Array.of(4), 0, 1, Number.NEGATIVE_INFINITY);
  assert.deepEqual(rowsOf(rows, "c").get(T0), {
    min: 4,
    max: 10,
    sum: 14,
    count: 2,
    firstT: null,
    firstV: null,
    lastT: null,
    lastV: null,
    resetCarry: null,
  });
});

import assert from "node:assert/strict";
import { test } from "node:test";
import { fmix32 } from "../src/fmix32.ts";

test("fmix32 is MurmurHash3's finalizer: its known values, 0 → 0, unsigned 32-bit output, and an avalanche", () => {
  assert.equal(fmix32(1), 0x514e28b7);
  assert.equal(fmix32(0), 0);
  assert.equal(fmix32(-1), fmix32(0xffffffff), "the input is taken as 32 bits");
  for (const n of [2, 42, 0x7fffffff, 0x80000000, 0xdeadbeef]) {
    const h = fmix32(n);
    assert.ok(Number.isInteger(h) && h >= 0 && h <= 0xffffffff);
  }
  // One flipped input bit flips about half the output bits (16 ± a wide margin, averaged over 32 inputs).
  let flipped = 0;
  for (let i = 0; i < 32; i++)
    flipped += (fmix32(i * 7919) ^ fmix32((i * 7919) ^ 1)).toString(2).replaceAll("0", "").length;
  assert.ok(Math.abs(flipped / 32 - 16) < 4, `mean flipped bits ${flipped / 32}`);
});

/**
 * Prometheus's duration syntax as metrics' PromQL and the console read it: every unit, units
 * combined, zero, and what Prometheus refuses (decimals, bare numbers, unknown units, spaces).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parsePromDurationMs } from "@casebook/kit/prom-duration";

test("Prometheus durations: each unit, combined, and zero", () => {
  assert.equal(parsePromDurationMs("250ms"), 250);
  assert.equal(parsePromDurationMs("15s"), 15_000);
  assert.equal(parsePromDurationMs("5m"), 300_000);
  assert.equal(parsePromDurationMs("1h30m"), 5_400_000);
  assert.equal(parsePromDurationMs("2d"), 172_800_000);
  assert.equal(parsePromDurationMs("1w"), 604_800_000);
  assert.equal(parsePromDurationMs("1y"), 31_536_000_000);
  assert.equal(parsePromDurationMs("1m500ms"), 60_500);
  assert.equal(parsePromDurationMs("0s"), 0);
});

test("what Prometheus refuses is not a duration", () => {
  for (const bad of ["", "1.5s", "15", "5 m", "5M", "1x", "s", "-5m", "5m "]) {
    assert.equal(parsePromDurationMs(bad), undefined, JSON.stringify(bad));
  }
});

/**
 * The gateway's paced admission of new sockets (CH-13, src/gateway/connect-pacer.ts), pure:
 * a burst at once, then one slot per interval; never more than burst + rate·t admitted in any
 * window of t seconds, whatever the arrivals; refused at once when the slot is too far away.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { int, seededRandom } from "@casebook/kit/random";
import { ConnectPacer } from "../src/gateway/connect-pacer.ts";

test("CH-13 a storm of reconnects: the burst at once, then one every 1/rate s, refused past the longest wait", () => {
  const pacer = new ConnectPacer({ ratePerS: 500, burst: 500, maxWaitMs: 2_000 });
  const waits = Array.from({ length: 1_600 }, () => pacer.reserve(10_000));
  assert.ok(
    waits.slice(0, 500).every((w) => w === 0),
    "the burst goes at once",
  );
  assert.ok(Math.abs(waits[500]! - 2) < 1e-9 && Math.abs(waits[999]! - 1_000) < 1e-9, "then 2 ms apart");
  assert.equal(waits.filter((w) => w !== undefined).length, 1_500, "the slots within 2 s: 500 + 500/s × 2 s");
  assert.ok(
    waits.slice(1_500).every((w) => w === undefined),
    "the rest refused at once",
  );
});

test("CH-13 a burst of arrivals at one instant is admitted whole, whatever the interval's rounding; the next is refused at a longest wait of 0", () => {
  for (const ratePerS of [3, 7, 500, 1_000 / 3]) {
    const burst = 3;
    const pacer = new ConnectPacer({ ratePerS, burst, maxWaitMs: 0 });
    const waits = Array.from({ length: burst + 1 }, () => pacer.reserve(12_345.678));
    assert.deepEqual(waits, [0, 0, 0, undefined], `rate ${ratePerS}`);
  }
});

test("CH-13 any arrivals: in every window of t seconds at most burst + rate·t sockets are admitted", () => {
  const rng = seededRandom("pacer");
  const ratePerS = 50;
  const burst = 20;
  const pacer = new ConnectPacer({ ratePerS, burst, maxWaitMs: 300 });
  const admitted: number[] = [];
  let nowMs = 0;
  for (let i = 0; i < 5_000; i++) {
    nowMs += int(rng, 40); // bursts and lulls: 0–39 ms between arrivals, many at the same instant
    const waitMs = pacer.reserve(nowMs);
    if (waitMs !== undefined) admitted.push(nowMs + waitMs);
  }
  admitted.sort((a, b) => a - b);
  for (let i = 0; i < admitted.length; i++) {
    for (let j = i; j < admitted.length && admitted[j]! - admitted[i]! <= 1_000; j++) {
      const windowS = (admitted[j]! - admitted[i]!) / 1_000;
      assert.ok(j - i + 1 <= burst + ratePerS * windowS + 1e-6, `${j - i + 1} admitted in ${windowS} s`);
    }
  }
  assert.ok(admitted.length > 1_000, "and it admits: the test is not vacuous");
});

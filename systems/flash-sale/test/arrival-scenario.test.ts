/**
 * FS-16 on the model of domain/arrival-scenario.ts: the same arrival curve (20× checkout's
 * capacity in the first second, decaying), with the stated client retry model, with and
 * without the waiting room.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { arrivalScenario } from "../src/domain/arrival-scenario.ts";

const CAPACITY = 300;
const config = { capacityPerS: CAPACITY, peakFactor: 20, decayS: 3, durationS: 180 };

test("FS-16 without the waiting room retries raise the peak and turn seconds of excess into a long overload; with it checkout gets at most its capacity every second", () => {
  const r = arrivalScenario(config, seededRandom(16));
  assert.equal(r.arrivals.peakPerS, 20 * CAPACITY);
  assert.ok(r.arrivals.aboveCapacityS <= 10, `arrivals exceed capacity for ${r.arrivals.aboveCapacityS} s`);
  // Without: the offered load is arrivals + retries — above the arrivals themselves.
  const amplified = r.without.offeredPerS.filter((o, t) => o > r.arrivals.perS[t]!).length;
  assert.ok(amplified > 0);
  assert.ok(
    r.without.overloadEndsS >= 4 * r.arrivals.aboveCapacityS,
    `overload lasts ${r.without.overloadEndsS} s for ${r.arrivals.aboveCapacityS} s of excess arrivals`,
  );
  assert.ok(r.without.gaveUp > 0, "some clients give up after their last retry, unserved");
  // With: never above capacity, nobody retries, every arrival served within the run.
  assert.ok(r.withRoom.offeredPerS.every((o) => o <= CAPACITY));
  assert.equal(r.withRoom.served, r.arrivals.total);
  assert.equal(r.withRoom.gaveUp, 0);
  assert.ok(r.withRoom.maxQueue > 10 * CAPACITY, "the room holds the excess instead");
});

test("FS-16 the model is bounded and deterministic on its random source", () => {
  assert.deepEqual(arrivalScenario(config, seededRandom(1)), arrivalScenario(config, seededRandom(1)));
  assert.throws(() => arrivalScenario({ ...config, durationS: 10_000 }, seededRandom(1)), RangeError);
});

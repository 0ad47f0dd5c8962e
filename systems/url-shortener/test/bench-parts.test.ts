/**
 * The bench's parts that can break without running it (a run needs wrk, nginx and minutes):
 * its flags (wrk's summary is read by lab's wrk-run, tested there).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { benchHelp, parseBenchArgs } from "../bench/main.ts";

test("the bench's flags: defaults, bounds refused by name", () => {
  assert.equal(parseBenchArgs([]).links, 1_000_000);
  assert.equal(parseBenchArgs(["--duration-s", "2"]).durationS, 2);
  assert.throws(() => parseBenchArgs(["--duration-s", "0"]), /duration/);
  assert.match(benchHelp, /zipf/);
});

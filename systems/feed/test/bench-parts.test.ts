/**
 * The bench's parts that can break without running it (a run needs both engines, wrk and
 * minutes): its flags — defaults, the scenario subset, bounds refused by name.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { benchHelp, parseBenchArgs } from "../bench/main.ts";

test("the bench's flags: both scenarios by default, a subset by name, bounds refused by name", () => {
  const defaults = parseBenchArgs([]);
  assert.deepEqual(defaults.scenarios, ["reads", "fanout"]);
  assert.equal(defaults.users, 20_000);
  assert.equal(defaults.celebrityFollowers, 1_000);
  assert.deepEqual(parseBenchArgs(["--scenarios", "reads"]).scenarios, ["reads"]);
  assert.throws(() => parseBenchArgs(["--scenarios", "writes"]), /scenarios/);
  assert.throws(() => parseBenchArgs(["--duration-s", "0"]), /duration/);
  assert.match(benchHelp, /pure pull/);
});

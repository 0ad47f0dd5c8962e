import assert from "node:assert/strict";
import { test } from "node:test";
import { cliErrors, exitCodeOf } from "../src/cli-errors.ts";

test("every CLI error code has a message and an exit code: 2 for the command line, 1 otherwise", () => {
  const usage = new Set(["CLI_USAGE", "CLI_SYSTEM_UNKNOWN", "CLI_SYSTEM_EXISTS", "CLI_PORT_CLAIMED"]);
  for (const code of Object.keys(cliErrors.specs) as (keyof typeof cliErrors.specs)[]) {
    const error = cliErrors.create(code);
    assert.ok(error.message.length > 20, code);
    assert.equal(exitCodeOf(error), usage.has(code) ? 2 : 1, code);
  }
  assert.equal(exitCodeOf(new Error("anything else")), 1);
});

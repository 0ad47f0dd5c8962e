/**
 * `npm test` loads `src/blocking-stdout.ts` into every test process so that `--test-force-exit`
 * loses no result on its way to the runner (nodejs/node#64833): many fast test files under
 * process isolation, each result counted.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const FILES = 12;
const TESTS = 200;

test("with blocking stdout, a forced exit keeps every result: the runner counts every test that ran", (t) => {
  const dir = mkdtempSync(join(tmpdir(), "casebook-force-exit-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (let f = 0; f < FILES; f++) {
    const lines = ['import { test } from "node:test";'];
    for (let i = 0; i < TESTS; i++)
      lines.push(`test("file ${f}, test ${i}, a name long enough to fill the pipe", () => {});`);
    writeFileSync(join(dir, `f${f}.test.mjs`), lines.join("\n"));
  }
  const blocking = fileURLToPath(new URL("../src/blocking-stdout.ts", import.meta.url));
  const run = spawnSync(
    process.execPath,
    [
      "--import",
      blocking,
      "--test",
      "--test-force-exit",
      "--test-concurrency=3",
      "--test-reporter=tap",
      "*.test.mjs",
    ],
    // NODE_TEST_CONTEXT (set for this file's own process) would make it report to this runner.
    { cwd: dir, encoding: "utf8", timeout: 120_000, env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
  );
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, new RegExp(`^# tests ${FILES * TESTS}$`, "m"));
  assert.match(run.stdout, new RegExp(`^# pass ${FILES * TESTS}$`, "m"));
});

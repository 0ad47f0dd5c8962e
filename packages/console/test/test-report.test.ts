/**
 * The claims table's source: node:test's junit report, read into cases and matched to claim
 * ids by the house rule (a claim's tests are those whose name starts with its id).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { claimResults, parseJunit, readTestReport } from "../src/test-report.ts";
import { TestReportFile } from "../src/test-report-file.ts";

/** What node:test's junit reporter writes (Node 24), trimmed. */
export const sampleJunit = `<?xml version="1.0" encoding="utf-8"?>
<testsuites>
	<testcase name="RL-01 five calls &lt;pass&gt;" time="0.1" classname="test" file="/repo/systems/rate-limiter/test/a.test.ts"/>
	<testcase name="RL-02 lazy refill" time="0.1" classname="test" file="/repo/systems/rate-limiter/test/a.test.ts" failure="boom">
		<failure type="testCodeFailure" message="boom">stack</failure>
	</testcase>
	<testcase name="RL-03 atomic (redis)" time="0.1" classname="test" file="/repo/systems/rate-limiter/test/b.test.ts">
		<skipped type="skipped" message="no engine"/>
	</testcase>
	<testsuite name="group" time="0.1" tests="1">
		<testcase name="RL-10 user and ip" time="0.1" classname="group" file="/repo/systems/rate-limiter/test/c.test.ts"/>
		<testcase name="RL-10b second half" time="0.1" classname="group" file="/repo/systems/rate-limiter/test/c.test.ts"/>
	</testsuite>
</testsuites>
`;

test("the junit report reads into cases: pass, fail, skipped, nested suites, entities", () => {
  const cases = parseJunit(sampleJunit);
  assert.deepEqual(
    cases.map((c) => [c.name, c.status]),
    [
      ["RL-01 five calls <pass>", "pass"],
      ["RL-02 lazy refill", "fail"],
      ["RL-03 atomic (redis)", "skipped"],
      ["RL-10 user and ip", "pass"],
      ["RL-10b second half", "pass"],
    ],
  );
});

test("each claim gets the tests carrying its id and their result; a claim no test carries is 'not run'", () => {
  const report = { cases: parseJunit(sampleJunit), writtenAtMs: 1 };
  const results = claimResults(
    [
      { id: "RL-01", text: "one" },
      { id: "RL-02", text: "two" },
      { id: "RL-03", text: "three" },
      { id: "RL-1", text: "not a prefix of RL-10" },
      { id: "RL-10", text: "ten" },
      { id: "RL-99", text: "none" },
    ],
    report,
    "/repo",
  );
  assert.deepEqual(
    results.map((r) => [r.id, r.status, r.tests.length]),
    [
      ["RL-01", "pass", 1],
      ["RL-02", "fail", 1],
      ["RL-03", "skipped", 1],
      ["RL-1", "not run", 0],
      ["RL-10", "pass", 1],
      ["RL-99", "not run", 0],
    ],
  );
  assert.equal(results[0]!.tests[0]!.file, "systems/rate-limiter/test/a.test.ts");
});

test("the report file is re-read only when it changed; no file is an empty report", () => {
  const dir = mkdtempSync(join(tmpdir(), "casebook-console-report-"));
  try {
    const path = join(dir, "test-report.xml");
    assert.deepEqual(readTestReport(path), { cases: [], writtenAtMs: undefined });
    const file = new TestReportFile(path);
    assert.equal(file.read().cases.length, 0);
    writeFileSync(path, sampleJunit);
    assert.equal(file.read().cases.length, 5);
    assert.equal(file.read(), file.read(), "unchanged: the same parsed report");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

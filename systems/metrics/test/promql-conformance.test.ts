/**
 * PromQL conformance: the 566 `eval` cases of Prometheus 2.42's own test files
 * (../shared/testdata/metrics/promql-testdata-v2.42.0, Apache-2.0, used in place) run against
 * this engine, instant and range mode, through `promql-test-script.ts`. Each file's floor is
 * what passes today, so a regression fails; the failing cases are printed as diagnostics.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { runTestScript } from "./promql-test-script.ts";

const DIR = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "..",
  "shared",
  "testdata",
  "metrics",
  "promql-testdata-v2.42.0",
);

/** Cases passing per file when this floor was last raised (of the file's total). */
const FLOORS: Record<string, { floor: number; total: number }> = {
  "aggregators.test": { floor: 83, total: 83 },
  "at_modifier.test": { floor: 33, total: 33 },
  "collision.test": { floor: 2, total: 2 },
  "functions.test": { floor: 207, total: 207 },
  "histograms.test": { floor: 38, total: 38 },
  "literals.test": { floor: 20, total: 20 },
  "operators.test": { floor: 94, total: 94 },
  "selectors.test": { floor: 31, total: 31 },
  "staleness.test": { floor: 14, total: 14 },
  "subquery.test": { floor: 25, total: 25 },
  "trig_functions.test": { floor: 19, total: 19 },
};

let passedAll = 0;
for (const [file, { floor, total }] of Object.entries(FLOORS)) {
  test(`PromQL conformance ${file}: at least ${floor} of ${total} Prometheus 2.42 cases pass`, (t) => {
    const report = runTestScript(readFileSync(join(DIR, file), "utf8"));
    assert.equal(report.total, total, "the file's eval count");
    passedAll += report.passed;
    t.diagnostic(`${file}: ${report.passed}/${report.total}`);
    for (const failure of report.failed)
      t.diagnostic(`  line ${failure.line}: ${failure.expr} — ${failure.reason}`);
    assert.ok(report.passed >= floor, `${report.passed} passed, floor ${floor}`);
  });
}

test("PromQL conformance: 566 cases in all", (t) => {
  assert.equal(
    Object.values(FLOORS).reduce((n, f) => n + f.total, 0),
    566,
  );
  t.diagnostic(`passed in all: ${passedAll}/566`);
});

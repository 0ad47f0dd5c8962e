/**
 * The test report file, re-read only when it changed (mtime and size): a page load reads
 * claims for every system, and a full run's report is megabytes of XML.
 *
 * @example
 * const file = new TestReportFile("/repo/.casebook-data/test-report.xml");
 * file.read().cases.length;
 */
import { existsSync, statSync } from "node:fs";
import { readTestReport, type TestReport } from "./test-report.ts";

export class TestReportFile {
  readonly path: string;
  #key = "";
  #report: TestReport = { cases: [], writtenAtMs: undefined };

  constructor(path: string) {
    this.path = path;
  }

  read(): TestReport {
    const stat = existsSync(this.path) ? statSync(this.path) : undefined;
    const key = stat === undefined ? "" : `${stat.mtimeMs}:${stat.size}`;
    if (key !== this.#key) {
      this.#report = readTestReport(this.path);
      this.#key = key;
    }
    return this.#report;
  }
}

/**
 * The last test run, as `npm test` leaves it: node:test's junit reporter writes
 * `.casebook-data/test-report.xml` beside the spec summary on stdout. Read here into test
 * cases, then matched to a system's claims: a claim's tests are those whose name starts with
 * its id (the house rule), and its result is fail if any failed, skipped if all skipped,
 * pass otherwise — or "not run" when no test of the last run carries the id.
 *
 * @example
 * const report = readTestReport("/repo/.casebook-data/test-report.xml");
 * claimResults(claims, report, root)[0]; // { id: "RL-01", text: "…", status: "pass", tests: [{ name, file }] }
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { relative } from "node:path";

export type CaseStatus = "pass" | "fail" | "skipped";
export type ClaimStatus = CaseStatus | "not run";

export interface TestCase {
  name: string;
  /** As the reporter wrote it: absolute. */
  file: string;
  status: CaseStatus;
}

export interface TestReport {
  cases: TestCase[];
  /** The report file's mtime, or undefined when there is no report yet. */
  writtenAtMs: number | undefined;
}

export interface ClaimResult {
  id: string;
  text: string;
  status: ClaimStatus;
  /** The tests that carry the id, file relative to the repository. */
  tests: { name: string; file: string; status: CaseStatus }[];
}

/** A full run's report is a few MB; past this it is not read (a console must not stall on it). */
export const maxReportBytes = 64 * 1024 * 1024;

const casePattern = /<testcase\s([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g;
const attributePattern = /([a-zA-Z_:-]+)="([^"]*)"/g;

export function readTestReport(file: string): TestReport {
  if (!existsSync(file)) return { cases: [], writtenAtMs: undefined };
  const stat = statSync(file);
  if (stat.size > maxReportBytes) return { cases: [], writtenAtMs: stat.mtimeMs };
  return { cases: parseJunit(readFileSync(file, "utf8")), writtenAtMs: stat.mtimeMs };
}

export function parseJunit(xml: string): TestCase[] {
  const cases: TestCase[] = [];
  for (const match of xml.matchAll(casePattern)) {
    const attributes = new Map<string, string>();
    for (const [, key, value] of match[1]!.matchAll(attributePattern))
      attributes.set(key!, unescapeXml(value!));
    const body = match[3] ?? "";
    const status: CaseStatus = /<failure\b/.test(body)
      ? "fail"
      : /<skipped\b/.test(body)
        ? "skipped"
        : "pass";
    cases.push({ name: attributes.get("name") ?? "", file: attributes.get("file") ?? "", status });
  }
  return cases;
}

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#\d+|#x[0-9a-fA-F]+);/g, (_, entity: string) => {
    if (entity === "lt") return "<";
    if (entity === "gt") return ">";
    if (entity === "quot") return '"';
    if (entity === "apos") return "'";
    if (entity === "amp") return "&";
    const code = entity.startsWith("#x") ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
    return String.fromCodePoint(code);
  });
}

/** Each claim with the tests that carry its id and what they did in the last run. */
export function claimResults(
  claims: readonly { id: string; text: string }[],
  report: TestReport,
  root: string,
): ClaimResult[] {
  return claims.map(({ id, text }) => {
    const idPattern = new RegExp(`^${id.replace(/[-]/g, "\\-")}(?![0-9A-Za-z])`);
    const tests = report.cases
      .filter((c) => idPattern.test(c.name))
      .map((c) => ({ name: c.name, file: c.file === "" ? "" : relative(root, c.file), status: c.status }));
    return { id, text, status: claimStatus(tests.map((t) => t.status)), tests };
  });
}

function claimStatus(statuses: readonly CaseStatus[]): ClaimStatus {
  if (statuses.length === 0) return "not run";
  if (statuses.includes("fail")) return "fail";
  if (statuses.every((s) => s === "skipped")) return "skipped";
  return "pass";
}

/**
 * The mutation check: for each hand-picked mutation of a system (see mutation-list.ts),
 * change the one `find` text to `replace`, run the listed test files with `node --test`,
 * and expect at least one of them to fail — a claim's tests that still pass on broken
 * code prove nothing about it. The file is restored after every run, on a failure of the
 * runner too; a copy of the original (`<file>.mutation-original`) is written first, so
 * even a runner killed with SIGKILL leaves what `recoverOriginals` puts back on the next
 * run. The listed tests are first run once unmutated (the baseline): a test that already
 * fails would make every mutation look caught.
 *
 * @example
 * const mutations = readMutationList(systemDir);
 * await checkBaseline(systemDir, mutations, options);
 * const results = await checkMutations(systemDir, mutations, options);
 * process.stdout.write(mutationReport(results));
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { fileURLToPath } from "node:url";
import { labErrors } from "./lab-errors.ts";
import type { Mutation } from "./mutation-list.ts";
import { signalTree } from "./process-tree.ts";

export interface FailedTest {
  readonly file: string;
  readonly name: string;
}

export interface TestRun {
  /** node --test's exit code; null when it was killed. */
  readonly exitCode: number | null;
  readonly failed: readonly FailedTest[];
  /** The run outlived `runTimeoutMs` and was killed (a hang the mutation caused, usually). */
  readonly timedOut: boolean;
  /** The end of node's stderr, for a run that failed without naming a test. */
  readonly stderrTail: string;
}

export interface MutationCheckOptions {
  /** Bound on one mutation's test runs (all its files); killed past it. */
  readonly runTimeoutMs: number;
  /** node's `--test-timeout`, per test. */
  readonly testTimeoutMs: number;
  /** Where node runs (the repository's root, as `npm test` does). */
  readonly cwd: string;
  /** Progress lines (stderr in the command). */
  readonly log?: (line: string) => void;
}

export type Outcome = "caught" | "caught (timeout)" | "survived" | "error";

export interface MutationResult {
  readonly mutation: Mutation;
  readonly outcome: Outcome;
  readonly run: TestRun;
}

/** Tail of stderr kept per run: enough for node's last error, bounded. */
const STDERR_TAIL_BYTES = 4_096;
const REPORTER = fileURLToPath(new URL("./mutation-reporter.ts", import.meta.url));
const ORIGINAL_SUFFIX = ".mutation-original";

/**
 * Runs each of `files` with its own node --test, in turn; resolves what failed, each failure
 * named by the file that ran it (node's own `file` is where `test()` was called: a shared
 * contract suite's module, not the test file). Never rejects on test failures.
 */
export async function runTests(files: readonly string[], options: MutationCheckOptions): Promise<TestRun> {
  const failed: FailedTest[] = [];
  let exitCode: number | null = 0;
  let stderrTail = "";
  const deadline = performance.now() + options.runTimeoutMs;
  for (const file of files) {
    const run = await runTestFile(file, {
      ...options,
      runTimeoutMs: Math.max(1, deadline - performance.now()),
    });
    failed.push(...run.failed);
    if (run.exitCode !== 0) {
      exitCode = run.exitCode;
      stderrTail = run.stderrTail;
    }
    if (run.timedOut) return { exitCode, failed, timedOut: true, stderrTail };
  }
  return { exitCode, failed, timedOut: false, stderrTail };
}

function runTestFile(file: string, options: MutationCheckOptions): Promise<TestRun> {
  const args = [
    "--test",
    `--test-timeout=${options.testTimeoutMs}`,
    `--test-reporter=${REPORTER}`,
    "--test-reporter-destination=stdout",
    file,
  ];
  // Run from inside a test (the runner's own), node --test would see NODE_TEST_CONTEXT and
  // talk the parent runner's wire format instead of using our reporter.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, args, { cwd: options.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderrTail = "";
  let timedOut = false;
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL_BYTES);
  });
  const kill = () => {
    if (child.pid !== undefined) signalTree(child.pid, "SIGKILL");
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.runTimeoutMs);
  process.once("exit", kill);
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      process.off("exit", kill);
    };
    child.once("error", (error) => {
      done();
      reject(error);
    });
    child.once("close", (code) => {
      done();
      const failed = stdout
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => ({ file, name: (JSON.parse(line) as { name: string }).name }));
      resolve({ exitCode: code, failed, timedOut, stderrTail });
    });
  });
}

/** Puts back any file a killed run left mutated; returns the files restored. */
export function recoverOriginals(systemDir: string, mutations: readonly Mutation[]): string[] {
  const restored: string[] = [];
  for (const file of new Set(mutations.map((m) => m.file))) {
    const path = join(systemDir, file);
    if (existsSync(path + ORIGINAL_SUFFIX)) {
      renameSync(path + ORIGINAL_SUFFIX, path);
      restored.push(file);
    }
  }
  return restored;
}

/**
 * Applies one mutation; returns the function that restores the file (idempotent, sync so
 * it can run in a signal or exit handler). Refuses a `find` that does not occur exactly once.
 */
export function applyMutation(systemDir: string, mutation: Mutation): () => void {
  const path = join(systemDir, mutation.file);
  const original = readFileSync(path, "utf8");
  const occurrences = original.split(mutation.find).length - 1;
  if (occurrences !== 1) {
    throw labErrors.create("LAB_MUTATION_INVALID", {
      detail: `${mutation.id}: find occurs ${occurrences} times in ${mutation.file}, not once`,
      fields: { field: `${mutation.id}.find` },
    });
  }
  writeFileSync(path + ORIGINAL_SUFFIX, original);
  writeFileSync(
    path,
    original.replace(mutation.find, () => mutation.replace),
  );
  let restored = false;
  return () => {
    if (restored) return;
    writeFileSync(path, original);
    rmSync(path + ORIGINAL_SUFFIX, { force: true });
    restored = true;
  };
}

function outcomeOf(run: TestRun): Outcome {
  if (run.timedOut) return "caught (timeout)";
  if (run.exitCode === 0) return "survived";
  return run.failed.length > 0 ? "caught" : "error";
}

function testPaths(systemDir: string, tests: readonly string[]): string[] {
  return tests.map((t) => join(systemDir, t));
}

/** Runs every listed test file once, unmutated; throws naming the tests that already fail. */
export async function checkBaseline(
  systemDir: string,
  mutations: readonly Mutation[],
  options: MutationCheckOptions,
): Promise<void> {
  const files = [...new Set(mutations.flatMap((m) => m.tests))];
  options.log?.(`baseline: ${files.length} test file(s), unmutated`);
  const run = await runTests(testPaths(systemDir, files), options);
  if (run.exitCode !== 0 || run.timedOut) {
    const names = run.failed.map((f) => `${basename(f.file)} › ${f.name}`).join("; ");
    throw labErrors.create("LAB_MUTATION_INVALID", {
      detail: `the listed tests fail without any mutation (${names || run.stderrTail.trim().slice(-500)}); fix them first`,
      fields: { field: "tests" },
    });
  }
}

/** Applies each mutation in turn, runs its tests, restores the file. */
export async function checkMutations(
  systemDir: string,
  mutations: readonly Mutation[],
  options: MutationCheckOptions,
): Promise<MutationResult[]> {
  const results: MutationResult[] = [];
  for (const mutation of mutations) {
    options.log?.(`${mutation.id} (${mutation.claim}): ${mutation.file}`);
    const restore = applyMutation(systemDir, mutation);
    process.once("exit", restore);
    let run: TestRun;
    try {
      run = await runTests(testPaths(systemDir, mutation.tests), options);
    } finally {
      restore();
      process.off("exit", restore);
    }
    const outcome = outcomeOf(run);
    options.log?.(`  → ${outcome}${run.failed.length > 0 ? `: ${run.failed[0]?.name}` : ""}`);
    results.push({ mutation, outcome, run });
  }
  return results;
}

/** Table cells hold no pipes or newlines; code spans no backticks. */
function cell(text: string, max = 90): string {
  const flat = text.replace(/\s+/g, " ").replaceAll("|", "\\|").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function code(text: string): string {
  return `\`${cell(text, 60).replaceAll("`", "'")}\``;
}

function failingCell(result: MutationResult): string {
  if (result.outcome === "survived") return "—";
  if (result.run.failed.length === 0) return cell(result.run.stderrTail.trim().split("\n").at(-1) ?? "");
  // The claim's own test first, when one of the failures is named after the claim.
  const ordered = [...result.run.failed].sort(
    (a, b) => Number(b.name.includes(result.mutation.claim)) - Number(a.name.includes(result.mutation.claim)),
  );
  const shown = ordered.slice(0, 1).map((f) => `${basename(f.file)} › ${cell(f.name, 100)}`);
  const more = result.run.failed.length - shown.length;
  return shown.join("; ") + (more > 0 ? `; +${more} more` : "");
}

/** The report: mutation → claim → change → caught? → failing test(s), as a markdown table. */
export function mutationReport(results: readonly MutationResult[]): string {
  const lines = ["| mutation | claim | change | caught? | failing test |", "|---|---|---|---|---|"];
  for (const r of results) {
    const change = `${r.mutation.file}: ${code(r.mutation.find)} → ${code(r.mutation.replace)}`;
    const caught = r.outcome === "survived" ? "**no**" : r.outcome === "caught" ? "yes" : r.outcome;
    lines.push(`| ${r.mutation.id} | ${r.mutation.claim} | ${change} | ${caught} | ${failingCell(r)} |`);
  }
  return `${lines.join("\n")}\n`;
}

export function allCaught(results: readonly MutationResult[]): boolean {
  return results.every((r) => r.outcome === "caught" || r.outcome === "caught (timeout)");
}

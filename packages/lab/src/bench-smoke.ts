/**
 * Smoke-testing a system's bench: run `bench/main.ts` as a child process (as
 * `casebook bench <name>` does) and check its `--json` lines keep the report's
 * shape. Shape only, never speed: speed lives in the bench itself.
 *
 * @example
 * const run = await runBenchChild(benchMain, ["--json", "--duration-ms", "300"], { unsetEnv: ["REDIS_URL"] });
 * const rows = parseBenchRows(run.stdout); // asserts every line's keys and numbers
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import type { BenchRow } from "./bench-report.ts";

/** One parsed `--json` line. */
export type BenchJsonRow = BenchRow;

export interface BenchChildRun {
  code: number;
  stdout: string;
  stderr: string;
}

const rowKeys = ["system", "scenario", "metric", "unit", "value", "peer", "peer_value", "ratio"];

/**
 * Runs `benchMain` with Node 24 and `args`. `unsetEnv` removes variables (e.g. REDIS_URL)
 * so the bench spawns its own engine; `timeoutMs` bounds the child so a hang fails the test.
 */
export function runBenchChild(
  benchMain: string,
  args: readonly string[],
  options: { unsetEnv?: readonly string[]; timeoutMs: number },
): Promise<BenchChildRun> {
  const env = { ...process.env };
  for (const name of options.unsetEnv ?? []) delete env[name];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [benchMain, ...args],
      { env, timeout: options.timeoutMs, maxBuffer: 10_000_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** Parses `--json` output, asserting each line has exactly the documented keys and finite numbers. */
export function parseBenchRows(stdout: string): BenchJsonRow[] {
  const lines = stdout.split("\n").filter((line) => line !== "");
  assert.ok(lines.length > 0, "the bench printed no rows");
  return lines.map((line) => {
    const row = JSON.parse(line) as BenchJsonRow;
    for (const key of ["system", "scenario", "metric", "unit"] as const) {
      assert.equal(typeof row[key], "string", `${key} in ${line}`);
    }
    assert.ok(Number.isFinite(row.value), `value in ${line}`);
    assert.deepEqual(
      Object.keys(row).filter((key) => !rowKeys.includes(key)),
      [],
      `only the documented keys in ${line}`,
    );
    if (row.peer !== undefined) assert.ok(Number.isFinite(row.peer_value), `peer_value in ${line}`);
    return row;
  });
}

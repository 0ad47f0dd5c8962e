/**
 * The Node flags a child started by a test should share with its parent: the suite runs with
 * `--liftoff-only` (package.json's `test`, `.ci/run`: on two cores, V8 optimizing PGlite's 9 MB
 * of WASM in each of the suite's ~2,000 short processes cost more than it saved), and `node
 * --test` hands it to each test file's process — but a service that file spawns with
 * `process.execPath` would start without it and pay the optimization again. A bench runs without
 * the flag, so its servers keep V8's optimizing tier.
 *
 * @example
 * spawn(process.execPath, [...childNodeFlags(), entry]);
 */

/** Flags passed on when this process has them; nothing else of `execArgv` (a child's own `--test…` or `--import` would be wrong). */
const INHERITED = new Set(["--liftoff-only"]);

export function childNodeFlags(execArgv: readonly string[] = process.execArgv): string[] {
  return execArgv.filter((flag) => INHERITED.has(flag));
}

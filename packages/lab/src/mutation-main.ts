/**
 * `npm run mutate -- <system> [--only id,id] [--no-baseline] [--run-timeout-ms N]`: runs the
 * system's mutation check (see mutation-check.ts) on demand — not in CI, it runs the
 * claim tests once per mutation. Progress goes to stderr, the markdown report to stdout
 * (paste it into the system's README). Exit 0 when every mutation was caught, 1 when one
 * survived or errored, 2 on a bad command line or list.
 *
 * @example
 * // npm run mutate -- rate-limiter > /tmp/report.md
 * // npm run mutate -- webhooks --only drop-row-lock
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { labErrors } from "./lab-errors.ts";
import {
  allCaught,
  checkBaseline,
  checkMutations,
  mutationReport,
  recoverOriginals,
} from "./mutation-check.ts";
import { MUTATION_LIST_PATH, readMutationList } from "./mutation-list.ts";

const USAGE = `usage: npm run mutate -- <system> [options]

Applies each mutation of systems/<system>/${MUTATION_LIST_PATH}, runs its tests with
node --test, and prints which were caught (a markdown table on stdout).

Options
  --only <id,id>          only these mutations
  --no-baseline           skip the unmutated run of the listed tests
  --run-timeout-ms <n>    bound on one node --test run (default 900000)
  --test-timeout-ms <n>   node's --test-timeout (default 300000)
  -h, --help              this text
`;

const log = (line: string): void => {
  process.stderr.write(`mutate: ${line}\n`);
};

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`--${name} must be a positive integer, got ${value}`);
  return n;
}

export async function mutateMain(argv: readonly string[], repoRoot: string): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  let timeouts: { runTimeoutMs: number; testTimeoutMs: number };
  try {
    parsed = parse(argv);
    timeouts = {
      runTimeoutMs: positiveInt(parsed.values["run-timeout-ms"], "run-timeout-ms", 900_000),
      testTimeoutMs: positiveInt(parsed.values["test-timeout-ms"], "test-timeout-ms", 300_000),
    };
  } catch (error) {
    process.stderr.write(`mutate: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const systems = readdirSync(join(repoRoot, "systems"));
  const name = positionals[0];
  if (name === undefined || positionals.length > 1 || !systems.includes(name)) {
    process.stderr.write(`mutate: name one system (${systems.join(", ")})\n${USAGE}`);
    return 2;
  }
  const systemDir = join(repoRoot, "systems", name);
  let mutations: ReturnType<typeof readMutationList>;
  try {
    mutations = readMutationList(systemDir);
    const only = values.only?.split(",").filter((id) => id !== "");
    if (only !== undefined) {
      const unknown = only.filter((id) => !mutations.some((m) => m.id === id));
      if (unknown.length > 0) throw new Error(`--only: no mutation ${unknown.join(", ")}`);
      mutations = mutations.filter((m) => only.includes(m.id));
    }
  } catch (error) {
    process.stderr.write(`mutate: ${(error as Error).message}\n`);
    return 2;
  }
  for (const file of recoverOriginals(systemDir, mutations))
    log(`restored ${file} left mutated by a killed run`);
  const options = { ...timeouts, cwd: repoRoot, log };
  // A signal's default action skips 'exit' handlers; exiting runs them, and they restore the file.
  const interrupted = (signal: NodeJS.Signals) => process.exit(signal === "SIGINT" ? 130 : 143);
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    if (!values["no-baseline"]) await checkBaseline(systemDir, mutations, options);
    const results = await checkMutations(systemDir, mutations, options);
    process.stdout.write(mutationReport(results));
    return allCaught(results) ? 0 : 1;
  } catch (error) {
    if (!labErrors.is(error, "LAB_MUTATION_INVALID")) throw error;
    process.stderr.write(`mutate: ${error.message}\n`);
    return 2;
  } finally {
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

function parse(argv: readonly string[]) {
  return parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      only: { type: "string" },
      "no-baseline": { type: "boolean" },
      "run-timeout-ms": { type: "string" },
      "test-timeout-ms": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
}

if (import.meta.main) {
  // CASEBOOK_ROOT: another repository (as the CLI reads it); the lab's own is the default.
  const repoRoot = process.env.CASEBOOK_ROOT ?? fileURLToPath(new URL("../../..", import.meta.url));
  if (!existsSync(join(repoRoot, "systems"))) throw new Error(`no systems/ under ${repoRoot}`);
  process.exitCode = await mutateMain(process.argv.slice(2), repoRoot);
}

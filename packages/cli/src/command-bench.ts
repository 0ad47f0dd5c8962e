/**
 * `casebook bench <name> [args…]`: runs a system's benchmark entry with Node 24,
 * every argument after the name passed through untouched (`--json` included),
 * and ends with the benchmark's exit code.
 *
 * @example
 * process.exitCode = await benchCommand(["rate-limiter", "--json"], io);
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cliErrors } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { discoverSystems, findSystem, type SystemInfo } from "./discover-systems.ts";
import { pathInDataRoot, runForeground } from "./foreground.ts";
import { helpText } from "./help.ts";
import { findRepoRoot } from "./repo-root.ts";
import { exitCodeFor } from "./supervisor.ts";

export async function benchCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === "-h" || first === "--help") {
    io.out(helpText("bench"));
    return 0;
  }
  const root = findRepoRoot(io.cliDir, io.env);
  const systems = discoverSystems(root);
  if (first === undefined || first.startsWith("-")) {
    const benchable = systems.filter((s) => existsSync(benchPath(s))).map((s) => s.name);
    throw cliErrors.create("CLI_USAGE", {
      detail:
        first === undefined
          ? "`casebook bench` needs the system's name."
          : `put the system's name first: \`casebook bench <name> ${argv.join(" ")}\`.`,
      fields: {
        hint:
          benchable.length > 0
            ? `Systems with a benchmark: ${benchable.join(", ")}.`
            : "No system has a benchmark yet. See `casebook bench --help`.",
      },
    });
  }
  const system = findSystem(systems, first);
  const entry = benchPath(system);
  if (!existsSync(entry)) {
    throw cliErrors.create("CLI_ENTRY_MISSING", {
      detail: `${system.name} has no benchmark yet: ${system.manifest.bench} does not exist (casebook.bench in ${system.file}).`,
      fields: { entry },
    });
  }
  // `casebook bench x -- --help` forwards --help; the `--` itself means nothing to the benchmark.
  const args = rest[0] === "--" ? rest.slice(1) : rest;
  const info = await runForeground(
    system,
    entry,
    args,
    pathInDataRoot(root, io.env, `${system.name}-bench`),
    io,
  );
  if (info.error) {
    io.err(`casebook: could not start the benchmark: ${info.error.message}\n`);
  }
  return exitCodeFor(info);
}

function benchPath(system: SystemInfo): string {
  return join(system.dir, system.manifest.bench);
}

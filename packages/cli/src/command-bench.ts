/**
 * `casebook bench <name> [args…]`: runs a system's benchmark entry with Node 24,
 * every argument after the name passed through untouched (`--json` included),
 * and ends with the benchmark's exit code.
 *
 * @example
 * process.exitCode = await benchCommand(["rate-limiter", "--json"], io);
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { cliErrors } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { didYouMean } from "./did-you-mean.ts";
import { discoverSystems, type SystemInfo } from "./discover-systems.ts";
import { helpText } from "./help.ts";
import { findRepoRoot } from "./repo-root.ts";
import { exitCodeFor } from "./supervisor.ts";
import type { ExitInfo } from "./system-process.ts";

const forwardedSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

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
  const info = await runForeground(system, entry, args, root, io);
  if (info.error) {
    io.err(`casebook: could not start the benchmark: ${info.error.message}\n`);
  }
  return exitCodeFor(info);
}

function benchPath(system: SystemInfo): string {
  return join(system.dir, system.manifest.bench);
}

function findSystem(systems: readonly SystemInfo[], name: string): SystemInfo {
  const system = systems.find((s) => s.name === name);
  if (system !== undefined) return system;
  const guess = didYouMean(
    name,
    systems.map((s) => s.name),
  );
  throw cliErrors.create("CLI_SYSTEM_UNKNOWN", {
    detail: `No system named '${name}'.`,
    fields: { hint: guess ? `Did you mean '${guess}'?` : "Run `casebook list`." },
  });
}

/**
 * The benchmark owns the terminal: its output goes straight through. It runs in
 * its own process group, so a Ctrl-C reaches it once, forwarded by us, and not
 * twice (once from the terminal, once from us).
 */
function runForeground(
  system: SystemInfo,
  entry: string,
  args: readonly string[],
  root: string,
  io: CliIo,
): Promise<ExitInfo> {
  const dataRoot = io.env.CASEBOOK_DATA ? resolve(io.env.CASEBOOK_DATA) : join(root, ".casebook-data");
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: system.dir,
    env: { ...system.manifest.env, ...io.env, CASEBOOK_DATA: join(dataRoot, `${system.name}-bench`) },
    stdio: "inherit",
    detached: true,
  });
  const forward = (signal: NodeJS.Signals) => child.kill(signal);
  const onExit = () => child.kill("SIGKILL");
  for (const signal of forwardedSignals) process.on(signal, forward);
  process.on("exit", onExit);
  return new Promise<ExitInfo>((resolvePromise) => {
    const finish = (info: ExitInfo) => {
      for (const signal of forwardedSignals) process.off(signal, forward);
      process.off("exit", onExit);
      resolvePromise(info);
    };
    child.once("error", (error) => finish({ code: null, signal: null, error }));
    child.once("exit", (code, signal) => finish({ code, signal }));
  });
}

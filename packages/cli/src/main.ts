/**
 * The `casebook` command: dispatches to list, up, run, bench, new, help and a system's own
 * tools (`casebook payments reconcile …`), and turns
 * every error into one readable message and an exit code (2: fix the command
 * line; 1: anything else).
 *
 * @example
 * process.exitCode = await main(["list"], io);
 */
import { CasebookError } from "@casebook/kit/errors";
import { plannedSystems } from "./architecture-map.ts";
import { cliErrors, exitCodeOf } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { benchCommand } from "./command-bench.ts";
import { listCommand } from "./command-list.ts";
import { newCommand } from "./command-new.ts";
import { toolCommand } from "./command-tool.ts";
import { runCommand, systemHelp, upCommand } from "./command-up.ts";
import { didYouMean } from "./did-you-mean.ts";
import { discoverSystems, type SystemInfo } from "./discover-systems.ts";
import { type CommandName, cliVersion, commandNames, helpText } from "./help.ts";
import { findRepoRoot } from "./repo-root.ts";

type Command = (argv: readonly string[], io: CliIo) => Promise<number>;

const commands: Record<CommandName, Command> = {
  list: listCommand,
  up: upCommand,
  run: runCommand,
  bench: benchCommand,
  new: newCommand,
  help: helpCommand,
};

export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    reportError(error, io);
    return exitCodeOf(error);
  }
}

async function dispatch(argv: readonly string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === "-h" || first === "--help") {
    io.out(helpText());
    return 0;
  }
  if (first === "-v" || first === "--version") {
    io.out(`casebook ${cliVersion()}\n`);
    return 0;
  }
  if (first.startsWith("-")) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `unknown option '${first}'; options go after the command.`,
      fields: { hint: "Run `casebook --help` for the commands and their options." },
    });
  }
  const command = commands[first as CommandName];
  if (!(commandNames as readonly string[]).includes(first) || command === undefined) {
    const tool = systemNamed(first, io);
    if (tool !== undefined) return toolCommand(tool.system, rest, tool.root, io);
    const guess = didYouMean(first, commandNames);
    throw cliErrors.create("CLI_USAGE", {
      detail: `unknown command '${first}'.`,
      fields: {
        hint: `${guess ? `Did you mean '${guess}'? ` : ""}Commands: ${commandNames.join(", ")}; see \`casebook --help\`.`,
      },
    });
  }
  return command(rest, io);
}

/** The system called `name`, for `casebook <system> <tool>`; undefined when none is (or the repo cannot be read). */
function systemNamed(name: string, io: CliIo): { system: SystemInfo; root: string } | undefined {
  try {
    const root = findRepoRoot(io.cliDir, io.env);
    const system = discoverSystems(root).find((s) => s.name === name);
    return system === undefined ? undefined : { system, root };
  } catch {
    return undefined; // an unknown command stays an unknown command
  }
}

/** A built or planned system's name (`casebook help chat` says it is planned). */
function isSystemName(name: string, io: CliIo): boolean {
  if (systemNamed(name, io) !== undefined) return true;
  try {
    return plannedSystems(findRepoRoot(io.cliDir, io.env), []).some((s) => s.name === name);
  } catch {
    return false;
  }
}

async function helpCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [topic, ...extra] = argv;
  if (topic === undefined || topic === "-h" || topic === "--help") {
    io.out(helpText(topic === undefined ? "top" : "help"));
    return 0;
  }
  if (extra.length === 0 && !(commandNames as readonly string[]).includes(topic) && isSystemName(topic, io)) {
    return systemHelp(topic, io);
  }
  if (extra.length > 0 || !(commandNames as readonly string[]).includes(topic)) {
    const guess = didYouMean(topic, commandNames);
    throw cliErrors.create("CLI_USAGE", {
      detail: `no help on '${argv.join(" ")}'.`,
      fields: { hint: `${guess ? `Did you mean '${guess}'? ` : ""}Topics: ${commandNames.join(", ")}.` },
    });
  }
  io.out(helpText(topic as CommandName));
  return 0;
}

function reportError(error: unknown, io: CliIo): void {
  if (error instanceof CasebookError) {
    const hint = typeof error.fields.hint === "string" ? `\n  hint: ${error.fields.hint}` : "";
    io.err(`casebook: ${error.message}${hint}\n`);
    return;
  }
  // Not one of ours: a bug or an environment problem; the stack is what a report needs.
  io.err(
    `casebook: unexpected error\n${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
}

/**
 * `casebook <system> [<tool> [args…]]`: a system's own command-line tools, declared in its
 * manifest (`"tools": { "reconcile": "src/workers/reconcile-cli.ts" }`), run in the
 * foreground with Node 24 — `casebook payments reconcile settlement-2026-10-22.csv`. The
 * tool gets the same environment as the running system (its manifest env, DATABASE_URL /
 * REDIS_URL when set, and the same CASEBOOK_DATA, so it sees the embedded database the
 * system uses) and casebook ends with its exit code. Without a tool name, the system's
 * tools are listed.
 *
 * @example
 * process.exitCode = await toolCommand(payments, ["reconcile", "--date", "2026-10-22"], root, io);
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cliErrors } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { didYouMean } from "./did-you-mean.ts";
import type { SystemInfo } from "./discover-systems.ts";
import { pathInDataRoot, runForeground } from "./foreground.ts";
import { exitCodeFor } from "./supervisor.ts";
import { toolSummary } from "./tool-summary.ts";

export async function toolCommand(
  system: SystemInfo,
  argv: readonly string[],
  root: string,
  io: CliIo,
): Promise<number> {
  const [name, ...rest] = argv;
  const tools = Object.keys(system.manifest.tools).sort();
  if (name === undefined || name === "-h" || name === "--help") {
    io.out(toolsText(system, tools));
    return 0;
  }
  const relative = system.manifest.tools[name];
  if (relative === undefined) {
    const guess = didYouMean(name, tools);
    throw cliErrors.create("CLI_USAGE", {
      detail: `${system.name} has no tool '${name}'.`,
      fields: {
        hint:
          `${guess ? `Did you mean '${guess}'? ` : ""}` +
          (tools.length > 0 ? `Its tools: ${tools.join(", ")}.` : `${system.name} has no tools.`),
      },
    });
  }
  const entry = join(system.dir, relative);
  if (!existsSync(entry)) {
    throw cliErrors.create("CLI_ENTRY_MISSING", {
      detail: `${system.name}'s tool '${name}' is not written yet: ${relative} does not exist (casebook.tools in ${system.file}).`,
      fields: { entry },
    });
  }
  const args = rest[0] === "--" ? rest.slice(1) : rest;
  const info = await runForeground(system, entry, args, pathInDataRoot(root, io.env, system.name), io);
  if (info.error) io.err(`casebook: could not start ${system.name} ${name}: ${info.error.message}\n`);
  return exitCodeFor(info);
}

/** One line per tool: the command, then what it does (the first sentence of its entry's doc comment). */
function toolsText(system: SystemInfo, tools: readonly string[]): string {
  if (tools.length === 0) return `${system.name} has no command-line tools. See \`casebook --help\`.\n`;
  const commands = tools.map((tool) => `casebook ${system.name} ${tool}`);
  const width = Math.max(...commands.map((c) => c.length));
  const lines = tools.map((tool, i) => {
    const summary =
      toolSummary(join(system.dir, system.manifest.tools[tool]!)) ?? `(${system.manifest.tools[tool]})`;
    return `  ${commands[i]!.padEnd(width)}  ${summary}`;
  });
  return `${system.name} — ${system.manifest.title}: its command-line tools (each takes --help)\n\n${lines.join("\n")}\n`;
}

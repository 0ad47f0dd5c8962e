/**
 * The command table and the dispatcher: find the command (case-insensitively), check
 * its arity, run it. Unknown commands and wrong arities get Redis's exact replies.
 * Container commands (CONFIG, CLIENT, COMMAND) dispatch their subcommand the same way.
 * `commandKeys` (command-spec.ts) reads a command's keys from its key positions, for
 * COMMAND GETKEYS and for cluster routing. A table may carry `DispatchHooks` (part 2, cluster mode): `before`
 * may answer instead of the command (-MOVED, -ASK, -CROSSSLOT, -CLUSTERDOWN), `after`
 * sees every command that ran (the replication stream).
 *
 * @example
 * const table = createCommandTable([...stringCommands, ...keyCommands]);
 * dispatch(table, ctx, ["GET", "k"]); // writes the reply on ctx.reply
 */

import { arityError, unknownCommandError, unknownSubcommandError } from "../../domain/reply-errors.ts";
import { needsCheck, passesAcl } from "./acl-check.ts";
import { arityAccepts, type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";

/** Runs around every command of a table (arity already checked). */
export interface DispatchHooks {
  /** False when the hook answered instead of the command (a redirect, a refusal): the command does not run. */
  before(ctx: CommandContext, spec: CommandSpec, args: readonly string[]): boolean;
  after(ctx: CommandContext, spec: CommandSpec, args: readonly string[]): void;
}

/** A command table, with the hooks its dispatch runs. */
export interface CommandTable extends Map<string, CommandSpec> {
  hooks?: DispatchHooks;
}

/** Lookup map: every name in lowercase and UPPERCASE, so the common spellings skip toLowerCase. */
export function createCommandTable(specs: readonly CommandSpec[], hooks?: DispatchHooks): CommandTable {
  const table: CommandTable = new Map<string, CommandSpec>();
  if (hooks !== undefined) table.hooks = hooks;
  for (const spec of specs) {
    if (spec.name !== spec.name.toLowerCase())
      throw new TypeError(`command name ${spec.name} must be lowercase`);
    if (table.has(spec.name)) throw new TypeError(`command ${spec.name} is defined twice`);
    table.set(spec.name, spec);
    table.set(spec.name.toUpperCase(), spec);
  }
  return table;
}

/** The spec of `name` in any case, or undefined. */
export function findCommand(table: ReadonlyMap<string, CommandSpec>, name: string): CommandSpec | undefined {
  return table.get(name) ?? table.get(name.toLowerCase());
}

/** Runs one command, writing exactly one reply (or none after QUIT is flagged, which replies itself). */
export function dispatch(
  table: ReadonlyMap<string, CommandSpec>,
  ctx: CommandContext,
  args: readonly string[],
) {
  const spec = findCommand(table, args[0]!);
  if (spec === undefined) {
    ctx.reply.error(unknownCommandError(args));
    return;
  }
  if (!arityAccepts(spec.arity, args.length)) {
    ctx.reply.error(arityError(spec.name));
    return;
  }
  // Auth and ACL, as Redis orders them: after arity, before cluster redirects.
  if (needsCheck(ctx) && !passesAcl(ctx, spec, args)) return;
  const hooks = (table as CommandTable).hooks;
  if (hooks === undefined) {
    spec.run(ctx, args);
    return;
  }
  if (!hooks.before(ctx, spec, args)) return;
  spec.run(ctx, args);
  hooks.after(ctx, spec, args);
}

/** Dispatches `args[1]` among a container's subcommands (CONFIG GET, CLIENT ID…). */
export function dispatchSubcommand(
  container: string,
  subcommands: readonly CommandSpec[],
  ctx: CommandContext,
  args: readonly string[],
): void {
  const wanted = `${container}|${args[1]!.toLowerCase()}`;
  const spec = subcommands.find((sub) => sub.name === wanted);
  if (spec === undefined) {
    ctx.reply.error(unknownSubcommandError(container, args[1]!));
    return;
  }
  if (!arityAccepts(spec.arity, args.length)) {
    ctx.reply.error(arityError(spec.name));
    return;
  }
  spec.run(ctx, args);
}

/**
 * A container's HELP subcommand (CONFIG HELP, OBJECT HELP…): its lines as simple strings, as
 * Redis's addReplyHelp sends them. `doc` is the subcommand's own (COMMAND DOCS shows it).
 */
export function helpSubcommand(
  container: string,
  lines: readonly string[],
  doc: { readonly since: string; readonly group: string; readonly complexity?: string },
  acl: readonly string[] = ["@slow"],
): CommandSpec {
  return {
    name: `${container}|help`,
    arity: 2,
    flags: ["loading", "stale"],
    keys: NO_KEYS,
    acl,
    doc: {
      summary: "Returns helpful text about the different subcommands.",
      since: doc.since,
      group: doc.group,
      complexity: doc.complexity ?? "O(1)",
    },
    run: (ctx) => {
      ctx.reply.arrayHeader(lines.length);
      for (const line of lines) ctx.reply.simple(line);
    },
  };
}

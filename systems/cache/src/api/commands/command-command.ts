/**
 * COMMAND and its subcommands (COUNT, INFO, DOCS, LIST, GETKEYS, HELP), generated from
 * the command table: arity, flags, key positions (first, last, step) and the Redis 7
 * key specs derived from them. Cluster-aware tools read key positions here; redis-cli
 * reads DOCS for its hints.
 *
 * @example
 * // COMMAND INFO get → [["get", 2, [readonly, fast], 1, 1, 1, [@read, @string, @fast], [], [keyspec], []]]
 */

import type { ReplyWriter } from "../resp-writer.ts";
import { arityAccepts, type CommandContext, type CommandSpec, commandKeys, NO_KEYS } from "./command-spec.ts";
import { dispatchSubcommand, findCommand, helpSubcommand } from "./command-table.ts";

/** Each spec once (the table maps both spellings of every name). */
function uniqueSpecs(table: ReadonlyMap<string, CommandSpec>): CommandSpec[] {
  return [...new Set(table.values())];
}

function writeKeySpecs(reply: ReplyWriter, spec: CommandSpec): void {
  if (spec.keys.first === 0) {
    reply.arrayHeader(0);
    return;
  }
  const { first, last, step } = spec.keys;
  const write = spec.flags.includes("write");
  reply.arrayHeader(1);
  reply.mapHeader(3);
  reply.bulk("flags");
  reply.setHeader(2);
  reply.simple(write ? "RW" : "RO");
  reply.simple(write ? "update" : "access");
  reply.bulk("begin_search");
  reply.mapHeader(2);
  reply.bulk("type");
  reply.bulk("index");
  reply.bulk("spec");
  reply.mapHeader(1);
  reply.bulk("index");
  reply.integer(first);
  reply.bulk("find_keys");
  reply.mapHeader(2);
  reply.bulk("type");
  reply.bulk("range");
  reply.bulk("spec");
  reply.mapHeader(3);
  reply.bulk("lastkey");
  reply.integer(last < 0 ? last : last - first);
  reply.bulk("keystep");
  reply.integer(step);
  reply.bulk("limit");
  reply.integer(0);
}

function writeCommandInfo(reply: ReplyWriter, spec: CommandSpec): void {
  reply.arrayHeader(10);
  reply.bulk(spec.name);
  reply.integer(spec.arity);
  reply.setHeader(spec.flags.length);
  for (const flag of spec.flags) reply.simple(flag);
  reply.integer(spec.keys.first);
  reply.integer(spec.keys.last);
  reply.integer(spec.keys.step);
  reply.setHeader(spec.acl.length);
  for (const category of spec.acl) reply.simple(category);
  const tips = spec.tips ?? [];
  reply.setHeader(tips.length);
  for (const tip of tips) reply.simple(tip);
  writeKeySpecs(reply, spec);
  const subcommands = spec.subcommands ?? [];
  reply.arrayHeader(subcommands.length);
  for (const sub of subcommands) writeCommandInfo(reply, sub);
}

function writeCommandDocs(reply: ReplyWriter, spec: CommandSpec): void {
  const subcommands = spec.subcommands ?? [];
  reply.mapHeader(subcommands.length > 0 ? 5 : 4);
  reply.bulk("summary");
  reply.bulk(spec.doc.summary);
  reply.bulk("since");
  reply.bulk(spec.doc.since);
  reply.bulk("group");
  reply.bulk(spec.doc.group);
  reply.bulk("complexity");
  reply.bulk(spec.doc.complexity);
  if (subcommands.length === 0) return;
  reply.bulk("subcommands");
  reply.mapHeader(subcommands.length);
  for (const sub of subcommands) {
    reply.bulk(sub.name);
    writeCommandDocs(reply, sub);
  }
}

function commandInfo(ctx: CommandContext, args: readonly string[]): void {
  const names = args.slice(2);
  const specs =
    names.length === 0 ? uniqueSpecs(ctx.node.commands) : names.map((n) => findCommand(ctx.node.commands, n));
  ctx.reply.arrayHeader(specs.length);
  for (const spec of specs) {
    if (spec === undefined) ctx.reply.nullArray();
    else writeCommandInfo(ctx.reply, spec);
  }
}

function commandDocs(ctx: CommandContext, args: readonly string[]): void {
  const names = args.slice(2);
  const found =
    names.length === 0 ? uniqueSpecs(ctx.node.commands) : names.map((n) => findCommand(ctx.node.commands, n));
  const specs = found.filter((spec): spec is CommandSpec => spec !== undefined);
  ctx.reply.mapHeader(specs.length);
  for (const spec of specs) {
    ctx.reply.bulk(spec.name);
    writeCommandDocs(ctx.reply, spec);
  }
}

function commandGetkeys(ctx: CommandContext, args: readonly string[]): void {
  const target = args.slice(2);
  const spec = findCommand(ctx.node.commands, target[0]!);
  if (spec === undefined) {
    ctx.reply.error("ERR Invalid command specified");
    return;
  }
  if (!arityAccepts(spec.arity, target.length)) {
    ctx.reply.error("ERR Invalid number of arguments specified for command");
    return;
  }
  const keys = commandKeys(spec, target);
  if (keys.length === 0) {
    ctx.reply.error("ERR The command has no key arguments");
    return;
  }
  ctx.reply.arrayHeader(keys.length);
  for (const key of keys) ctx.reply.bulk(key);
}

const COMMAND_HELP = [
  "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "(no subcommand)",
  "    Return details about all commands.",
  "COUNT",
  "    Return the total number of commands in this server.",
  "LIST",
  "    Return a list of all commands in this server.",
  "INFO [<command-name> ...]",
  "    Return details about multiple commands.",
  "DOCS [<command-name> ...]",
  "    Return documentation details about multiple commands.",
  "GETKEYS <full-command>",
  "    Return the keys from a full command.",
  "HELP",
  "    Print this help.",
];

const subDoc = (summary: string) =>
  ({ summary, since: "2.8.13", group: "server", complexity: "O(N)" }) as const;
const SUB_FLAGS = ["loading", "stale"] as const;
const SUB_ACL = ["@slow", "@connection"] as const;

const commandSubcommands: readonly CommandSpec[] = [
  {
    name: "command|count",
    arity: 2,
    flags: SUB_FLAGS,
    keys: NO_KEYS,
    acl: SUB_ACL,
    doc: subDoc("Returns a count of commands."),
    run: (ctx) => ctx.reply.integer(uniqueSpecs(ctx.node.commands).length),
  },
  {
    name: "command|info",
    arity: -2,
    flags: SUB_FLAGS,
    keys: NO_KEYS,
    acl: SUB_ACL,
    doc: subDoc("Returns information about one, multiple or all commands."),
    run: commandInfo,
  },
  {
    name: "command|docs",
    arity: -2,
    flags: SUB_FLAGS,
    keys: NO_KEYS,
    acl: SUB_ACL,
    doc: subDoc("Returns documentary information about one, multiple or all commands."),
    run: commandDocs,
  },
  {
    name: "command|list",
    arity: -2,
    flags: SUB_FLAGS,
    keys: NO_KEYS,
    acl: SUB_ACL,
    doc: subDoc("Returns a list of command names."),
    run: (ctx) => {
      const specs = uniqueSpecs(ctx.node.commands);
      ctx.reply.arrayHeader(specs.length);
      for (const spec of specs) ctx.reply.bulk(spec.name);
    },
  },
  {
    name: "command|getkeys",
    arity: -4,
    flags: SUB_FLAGS,
    keys: NO_KEYS,
    acl: SUB_ACL,
    doc: subDoc("Extracts the key names from an arbitrary command."),
    run: commandGetkeys,
  },
  helpSubcommand("command", COMMAND_HELP, { since: "2.8.13", group: "server", complexity: "O(N)" }, SUB_ACL),
];

export const commandCommand: CommandSpec = {
  name: "command",
  arity: -1,
  flags: ["loading", "stale"],
  keys: NO_KEYS,
  acl: ["@slow", "@connection"],
  doc: {
    summary: "Returns detailed information about all commands.",
    since: "2.8.13",
    group: "server",
    complexity: "O(N) where N is the total number of Redis commands",
  },
  subcommands: commandSubcommands,
  run: (ctx, args) => {
    if (args.length === 1) return commandInfo(ctx, ["command", "info"]);
    dispatchSubcommand("command", commandSubcommands, ctx, args);
  },
};

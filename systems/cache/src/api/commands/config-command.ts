/**
 * CONFIG GET (glob patterns, several at once), CONFIG SET (several pairs, all or
 * nothing, as Redis 7), CONFIG RESETSTAT and CONFIG HELP, with Redis's error texts.
 *
 * @example
 * // CONFIG SET maxmemory 64mb maxmemory-policy allkeys-lfu → OK (both applied)
 * // CONFIG SET maxmemory 64mb maxmemory-policy bad        → -ERR CONFIG SET failed … (neither applied)
 */

import { type CommandContext, type CommandSpec, type ConfigParam, NO_KEYS } from "./command-spec.ts";
import { dispatchSubcommand, helpSubcommand } from "./command-table.ts";
import { globMatch } from "./glob-match.ts";

function configGet(ctx: CommandContext, args: readonly string[]): void {
  const matched: ConfigParam[] = [];
  for (const param of ctx.node.config.values()) {
    for (let i = 2; i < args.length; i++) {
      if (globMatch(args[i]!, param.name, { noCase: true })) {
        matched.push(param);
        break;
      }
    }
  }
  ctx.reply.mapHeader(matched.length);
  for (const param of matched) {
    ctx.reply.bulk(param.name);
    ctx.reply.bulk(param.get());
  }
}

function setFailure(name: string, reason: string): string {
  return `ERR CONFIG SET failed (possibly related to argument '${name}') - ${reason}`;
}

/** Validates every pair first, then applies them: a bad pair changes nothing. */
function configSet(ctx: CommandContext, args: readonly string[]): void {
  if (args.length % 2 !== 0) {
    ctx.reply.error("ERR wrong number of arguments for 'config|set' command");
    return;
  }
  const changes: Array<{ param: ConfigParam; value: string }> = [];
  const seen = new Set<string>();
  for (let i = 2; i < args.length; i += 2) {
    const name = args[i]!.toLowerCase();
    const param = ctx.node.config.get(name);
    if (param === undefined) {
      ctx.reply.error(`ERR Unknown option or number of arguments for CONFIG SET - '${args[i]}'`);
      return;
    }
    if (param.validate === undefined || param.apply === undefined) {
      ctx.reply.error(setFailure(param.name, "can't set immutable config"));
      return;
    }
    if (seen.has(name)) {
      ctx.reply.error(setFailure(param.name, "duplicate parameter"));
      return;
    }
    seen.add(name);
    const problem = param.validate(args[i + 1]!);
    if (problem !== undefined) {
      ctx.reply.error(setFailure(param.name, problem));
      return;
    }
    changes.push({ param, value: args[i + 1]! });
  }
  for (const { param, value } of changes) param.apply!(value);
  ctx.reply.simple("OK");
}

const CONFIG_HELP = [
  "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "GET <pattern>",
  "    Return parameters matching the glob-like <pattern> and their values.",
  "SET <directive> <value>",
  "    Set the configuration <directive> to <value>.",
  "RESETSTAT",
  "    Reset statistics reported by the INFO command.",
  "HELP",
  "    Print this help.",
];

const subDoc = (summary: string, since: string) =>
  ({
    summary,
    since,
    group: "server",
    complexity: "O(N) when N is the number of configuration parameters provided",
  }) as const;

const configSubcommands: readonly CommandSpec[] = [
  {
    name: "config|get",
    arity: -3,
    flags: ["admin", "noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@admin", "@slow", "@dangerous"],
    doc: subDoc("Returns the effective values of configuration parameters.", "2.0.0"),
    run: configGet,
  },
  {
    name: "config|set",
    arity: -4,
    flags: ["admin", "noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@admin", "@slow", "@dangerous"],
    doc: subDoc("Sets configuration parameters in-flight.", "2.0.0"),
    run: configSet,
  },
  {
    name: "config|resetstat",
    arity: 2,
    flags: ["admin", "noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@admin", "@slow", "@dangerous"],
    doc: subDoc("Resets the server's statistics.", "2.0.0"),
    run: (ctx) => {
      ctx.keyspace.resetStats();
      ctx.node.resetStats();
      ctx.reply.simple("OK");
    },
  },
  helpSubcommand("config", CONFIG_HELP, {
    since: "5.0.0",
    group: "server",
    complexity: "O(N) when N is the number of configuration parameters provided",
  }),
];

export const configCommand: CommandSpec = {
  name: "config",
  arity: -2,
  flags: [],
  keys: NO_KEYS,
  acl: ["@slow"],
  doc: {
    summary: "A container for server configuration commands.",
    since: "2.0.0",
    group: "server",
    complexity: "Depends on subcommand.",
  },
  subcommands: configSubcommands,
  run: (ctx, args) => dispatchSubcommand("config", configSubcommands, ctx, args),
};

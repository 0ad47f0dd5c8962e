/**
 * AUTH and ACL: Redis's own answer to "who may talk to this node" (domain/acl-users.ts),
 * with Redis 7.0's replies word for word (acl-conformance compares them with redis-server).
 * `AUTH password` authenticates as `default` (what `requirepass` protects); `AUTH user
 * password` as a named user. ACL subcommands: SETUSER, GETUSER, DELUSER, LIST, USERS,
 * WHOAMI, CAT, HELP. Not here: ACL LOG, ACL SAVE/LOAD (no ACL file), ACL GENPASS, ACL
 * DRYRUN, selectors, channel rules beyond all/none.
 *
 * @example
 * // ACL SETUSER app on >s3cret ~app:* +@read +@write  → OK
 * // AUTH app s3cret                                    → OK
 * // ACL WHOAMI                                         → "app"
 */
import type { AclUser } from "../../domain/acl-users.ts";
import { type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";
import { dispatchSubcommand, helpSubcommand } from "./command-table.ts";

export const AUTH_ERRORS = Object.freeze({
  noAuth: "NOAUTH Authentication required.",
  wrongPass: "WRONGPASS invalid username-password pair or user is disabled.",
  noPasswordConfigured:
    "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
});

/**
 * Authenticates the connection as `name`; false (and nothing changes) on a wrong pair.
 * Shared by AUTH and HELLO … AUTH.
 */
export function authenticate(ctx: CommandContext, name: string, password: string): boolean {
  const user = ctx.node.acl.authenticate(name, password);
  if (user === undefined) return false;
  ctx.client.user = user;
  ctx.client.authenticated = true;
  return true;
}

function authCommand(ctx: CommandContext, args: readonly string[]): void {
  if (args.length > 3) {
    ctx.reply.error("ERR syntax error");
    return;
  }
  if (args.length === 2 && ctx.node.acl.default.noPass) {
    ctx.reply.error(AUTH_ERRORS.noPasswordConfigured);
    return;
  }
  const [name, password] = args.length === 2 ? ["default", args[1]!] : [args[1]!, args[2]!];
  if (authenticate(ctx, name, password)) ctx.reply.simple("OK");
  else ctx.reply.error(AUTH_ERRORS.wrongPass);
}

function aclSetuser(ctx: CommandContext, args: readonly string[]): void {
  const failure = ctx.node.acl.setUser(args[2]!, args.slice(3));
  if (failure === undefined) ctx.reply.simple("OK");
  else ctx.reply.error(`ERR Error in ACL SETUSER modifier '${failure.rule}': ${failure.reason}`);
}

function aclGetuser(ctx: CommandContext, args: readonly string[]): void {
  const user = ctx.node.acl.get(args[2]!);
  const { reply } = ctx;
  if (user === undefined) {
    reply.nullBulk();
    return;
  }
  reply.mapHeader(6);
  reply.bulk("flags");
  const flags = [user.enabled ? "on" : "off", ...(user.noPass ? ["nopass"] : [])];
  reply.setHeader(flags.length);
  for (const flag of flags) reply.bulk(flag);
  reply.bulk("passwords");
  reply.arrayHeader(user.passwords.size);
  for (const hash of user.passwords) reply.bulk(hash);
  reply.bulk("commands");
  reply.bulk(user.commandRules.join(" "));
  reply.bulk("keys");
  reply.bulk(user.allKeys ? "~*" : user.keyPatterns.map((p) => `~${p}`).join(" "));
  reply.bulk("channels");
  reply.bulk(user.allChannels ? "&*" : "");
  reply.bulk("selectors");
  reply.arrayHeader(0);
}

function stringList(ctx: CommandContext, items: readonly string[]): void {
  ctx.reply.arrayHeader(items.length);
  for (const item of items) ctx.reply.bulk(item);
}

const ACL_HELP = [
  "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "CAT [<category>]",
  "    List all commands that belong to <category>, or all command categories",
  "    when no category is specified.",
  "DELUSER <username> [<username> ...]",
  "    Delete a list of users.",
  "GETUSER <username>",
  "    Get the user's details.",
  "LIST",
  "    Show users details in config file format.",
  "SETUSER <username> <attribute> [<attribute> ...]",
  "    Create or modify a user with the specified attributes.",
  "USERS",
  "    List all the registered usernames.",
  "WHOAMI",
  "    Return the current connection username.",
  "HELP",
  "    Print this help.",
];

function subDoc(summary: string, complexity = "O(1)") {
  return { summary, since: "6.0.0", group: "server", complexity };
}

function adminSub(name: string, arity: number, summary: string, run: CommandSpec["run"]): CommandSpec {
  return {
    name: `acl|${name}`,
    arity,
    flags: ["admin", "noscript", "loading", "stale", "sentinel"],
    keys: NO_KEYS,
    acl: ["@admin", "@slow", "@dangerous"],
    doc: subDoc(summary, "O(N)"),
    run,
  };
}

const aclSubcommands: readonly CommandSpec[] = [
  adminSub("setuser", -3, "Creates and modifies an ACL user and its rules.", aclSetuser),
  adminSub("getuser", 3, "Lists the ACL rules of a user.", aclGetuser),
  adminSub("deluser", -3, "Deletes ACL users, and terminates their connections.", (ctx, args) => {
    if (args.slice(2).includes("default")) ctx.reply.error("ERR The 'default' user cannot be removed");
    else ctx.reply.integer(ctx.node.acl.deleteUsers(args.slice(2)));
  }),
  adminSub("list", 2, "Dumps the effective rules in ACL file format.", (ctx) =>
    stringList(
      ctx,
      ctx.node.acl.names().map((name) => ctx.node.acl.describe(ctx.node.acl.get(name) as AclUser)),
    ),
  ),
  adminSub("users", 2, "Lists all ACL users.", (ctx) => stringList(ctx, ctx.node.acl.names())),
  {
    name: "acl|whoami",
    arity: 2,
    flags: ["noscript", "loading", "stale", "sentinel"],
    keys: NO_KEYS,
    acl: ["@slow"],
    doc: subDoc("Returns the authenticated username of the current connection."),
    run: (ctx) => ctx.reply.bulk(ctx.client.user.name),
  },
  {
    name: "acl|cat",
    arity: -2,
    flags: ["noscript", "loading", "stale", "sentinel"],
    keys: NO_KEYS,
    acl: ["@slow"],
    doc: subDoc("Lists the ACL categories, or the commands inside a category."),
    run: (ctx, args) => {
      if (args.length > 3) {
        ctx.reply.error("ERR wrong number of arguments for 'acl|cat' command");
        return;
      }
      if (args.length === 2) {
        stringList(ctx, ctx.node.acl.categories());
        return;
      }
      const commands = ctx.node.acl.commandsIn(args[2]!.toLowerCase());
      if (commands === undefined) ctx.reply.error(`ERR Unknown category '${args[2]}'`);
      else stringList(ctx, commands);
    },
  },
  helpSubcommand("acl", ACL_HELP, { since: "6.0.0", group: "server" }),
];

export const aclCommands: readonly CommandSpec[] = [
  {
    name: "auth",
    arity: -2,
    flags: ["noscript", "loading", "stale", "fast", "no_auth", "sentinel", "allow_busy"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: {
      summary: "Authenticates the connection.",
      since: "1.0.0",
      group: "connection",
      complexity: "O(N) where N is the number of passwords defined for the user",
    },
    run: authCommand,
  },
  {
    name: "acl",
    arity: -2,
    flags: ["sentinel"],
    keys: NO_KEYS,
    acl: ["@slow"],
    doc: {
      summary: "A container for Access List Control commands.",
      since: "6.0.0",
      group: "server",
      complexity: "Depends on subcommand.",
    },
    subcommands: aclSubcommands,
    run: (ctx, args) => dispatchSubcommand("acl", aclSubcommands, ctx, args),
  },
];

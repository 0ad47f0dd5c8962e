/**
 * Connection commands: PING, ECHO, HELLO (RESP2/RESP3 negotiation; ioredis 6 opens
 * every connection with `HELLO 3`), SELECT (database 0 only: a cluster node has one,
 * as in Redis Cluster), QUIT, RESET and CLIENT (ID, SETNAME, GETNAME, SETINFO — which
 * ioredis sends on connect — LIST and INFO (client-list-command.ts), HELP), and WAIT
 * (wait-command.ts).
 *
 * @example
 * // HELLO 3 → %7 server redis version … proto 3 id 7 mode standalone role master modules []
 */

import { parseInt64 } from "../../domain/integer-arg.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { AUTH_ERRORS, authenticate } from "./acl-commands.ts";
import { clientListHelp, clientListSubcommands } from "./client-list-command.ts";
import { type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";
import { dispatchSubcommand, helpSubcommand } from "./command-table.ts";
import { waitCommand } from "./wait-command.ts";

/** The Redis version whose commands and replies this node follows (HELLO, INFO redis_version). */
export const REDIS_COMPAT_VERSION = "7.2.0";

/** `cluster` on a node started in cluster mode (its table has CLUSTER), as HELLO and INFO say. */
export function serverMode(ctx: CommandContext): "cluster" | "standalone" {
  return ctx.node.commands.has("cluster") ? "cluster" : "standalone";
}

/** `replica` while this node follows a primary; a standalone node is always `master`. */
export function serverRole(ctx: CommandContext): "master" | "replica" {
  return ctx.node.replication?.active === false ? "replica" : "master";
}

/** Redis's rule for client names and library names: printable ASCII without spaces. */
function isValidName(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const code = name.charCodeAt(i);
    if (code < 33 || code > 126) return false;
  }
  return true;
}

function pingCommand(ctx: CommandContext, args: readonly string[]): void {
  if (args.length > 2) {
    ctx.reply.error("ERR wrong number of arguments for 'ping' command");
    return;
  }
  if (args.length === 2) ctx.reply.bulk(args[1]!);
  else ctx.reply.simple("PONG");
}

function helloReply(ctx: CommandContext): void {
  const { reply, client } = ctx;
  reply.mapHeader(7);
  reply.bulk("server");
  reply.bulk("redis");
  reply.bulk("version");
  reply.bulk(REDIS_COMPAT_VERSION);
  reply.bulk("proto");
  reply.integer(client.protocol);
  reply.bulk("id");
  reply.integer(client.id);
  reply.bulk("mode");
  reply.bulk(serverMode(ctx));
  reply.bulk("role");
  reply.bulk(serverRole(ctx));
  reply.bulk("modules");
  reply.arrayHeader(0);
}

const HELLO_NOAUTH =
  "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time";

function helloCommand(ctx: CommandContext, args: readonly string[]): void {
  let protocol: 2 | 3 | undefined;
  let next = 1;
  if (args.length >= 2) {
    const version = parseInt64(args[1]!);
    next = 2;
    if (version === undefined) {
      ctx.reply.error(REPLY_ERRORS.helloVersion);
      return;
    }
    if (version !== 2 && version !== 3) {
      ctx.reply.error(REPLY_ERRORS.noProto);
      return;
    }
    protocol = version;
  }
  let name: string | undefined;
  let credentials: { user: string; password: string } | undefined;
  for (let i = next; i < args.length; i++) {
    const option = args[i]!.toLowerCase();
    const more = args.length - 1 - i;
    if (option === "auth" && more >= 2) {
      credentials = { user: args[i + 1]!, password: args[i + 2]! };
      i += 2;
    } else if (option === "setname" && more >= 1) name = args[++i]!;
    else {
      ctx.reply.error(`ERR Syntax error in HELLO option '${args[i]}'`);
      return;
    }
  }
  // As Redis: AUTH first (a wrong pair changes nothing), then the NOAUTH check, then the rest.
  if (credentials !== undefined && !authenticate(ctx, credentials.user, credentials.password)) {
    ctx.reply.error(AUTH_ERRORS.wrongPass);
    return;
  }
  if (!ctx.client.authenticated) {
    ctx.reply.error(HELLO_NOAUTH);
    return;
  }
  if (name !== undefined) {
    if (!isValidName(name)) {
      ctx.reply.error(REPLY_ERRORS.clientName);
      return;
    }
    ctx.client.name = name;
  }
  if (protocol !== undefined) {
    ctx.client.protocol = protocol;
    ctx.reply.useProtocol(protocol);
  }
  helloReply(ctx);
}

function selectCommand(ctx: CommandContext, args: readonly string[]): void {
  const index = parseInt64(args[1]!);
  if (index === undefined) {
    ctx.reply.error(REPLY_ERRORS.notInteger);
    return;
  }
  if (typeof index === "bigint" || index > 2 ** 31 - 1 || index < -(2 ** 31)) {
    ctx.reply.error("ERR value is out of range, value must between -2147483648 and 2147483647");
    return;
  }
  if (index !== 0) {
    ctx.reply.error(REPLY_ERRORS.dbIndex);
    return;
  }
  ctx.reply.simple("OK");
}

function resetCommand(ctx: CommandContext): void {
  // Redis's RESET also returns the connection to the default user (clientSetDefaultAuth).
  ctx.client.user = ctx.node.acl.default;
  ctx.client.authenticated = ctx.node.acl.defaultOpen;
  ctx.client.name = "";
  ctx.client.protocol = 2;
  ctx.reply.useProtocol(2);
  ctx.reply.simple("RESET");
}

const CLIENT_HELP = [
  "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "GETNAME",
  "    Return the name of the current connection.",
  "ID",
  "    Return the ID of the current connection.",
  "SETNAME <name>",
  "    Assign the name <name> to the current connection.",
  "SETINFO <option> <value>",
  "    Set client meta attr. Options are: LIB-NAME, LIB-VER.",
  ...clientListHelp,
  "HELP",
  "    Print this help.",
];

function clientSetinfo(ctx: CommandContext, args: readonly string[]): void {
  const option = args[2]!.toLowerCase();
  const value = args[3]!;
  if (option !== "lib-name" && option !== "lib-ver") {
    ctx.reply.error(`ERR Unrecognized option '${args[2]}'`);
    return;
  }
  if (!isValidName(value) && value !== "") {
    ctx.reply.error(`ERR ${option} cannot contain spaces, newlines or special characters.`);
    return;
  }
  if (option === "lib-name") ctx.client.libName = value;
  else ctx.client.libVersion = value;
  ctx.reply.simple("OK");
}

const subcommandDoc = (summary: string, since: string) =>
  ({ summary, since, group: "connection", complexity: "O(1)" }) as const;

const clientSubcommands: readonly CommandSpec[] = [
  {
    name: "client|id",
    arity: 2,
    flags: ["noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@slow", "@connection"],
    doc: subcommandDoc("Returns the unique client ID of the connection.", "5.0.0"),
    run: (ctx) => ctx.reply.integer(ctx.client.id),
  },
  {
    name: "client|getname",
    arity: 2,
    flags: ["noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@slow", "@connection"],
    doc: subcommandDoc("Returns the name of the connection.", "2.6.9"),
    run: (ctx) => (ctx.client.name === "" ? ctx.reply.nullBulk() : ctx.reply.bulk(ctx.client.name)),
  },
  {
    name: "client|setname",
    arity: 3,
    flags: ["noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@slow", "@connection"],
    doc: subcommandDoc("Sets the connection name.", "2.6.9"),
    run: (ctx, args) => {
      if (!isValidName(args[2]!) && args[2] !== "") return ctx.reply.error(REPLY_ERRORS.clientName);
      ctx.client.name = args[2]!;
      ctx.reply.simple("OK");
    },
  },
  {
    name: "client|setinfo",
    arity: 4,
    flags: ["noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@slow", "@connection"],
    doc: subcommandDoc("Sets information specific to the client or connection.", "7.2.0"),
    run: clientSetinfo,
  },
  helpSubcommand("client", CLIENT_HELP, { since: "5.0.0", group: "connection" }, ["@slow", "@connection"]),
  ...clientListSubcommands,
];

const doc = (summary: string, since: string) =>
  ({ summary, since, group: "connection", complexity: "O(1)" }) as const;

export const connectionCommands: readonly CommandSpec[] = [
  waitCommand,
  {
    name: "ping",
    arity: -1,
    flags: ["fast"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: doc("Returns the server's liveliness response.", "1.0.0"),
    run: pingCommand,
  },
  {
    name: "echo",
    arity: 2,
    flags: ["fast"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: doc("Returns the given string.", "1.0.0"),
    run: (ctx, args) => ctx.reply.bulk(args[1]!),
  },
  {
    name: "hello",
    arity: -1,
    flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: doc("Handshakes with the Redis server.", "6.0.0"),
    run: helloCommand,
  },
  {
    name: "select",
    arity: 2,
    flags: ["loading", "stale", "fast"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: doc("Changes the selected database.", "1.0.0"),
    run: selectCommand,
  },
  {
    name: "quit",
    arity: -1,
    flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: doc("Closes the connection.", "1.0.0"),
    run: (ctx) => {
      ctx.reply.simple("OK");
      ctx.client.closeAfterReply = true;
    },
  },
  {
    name: "reset",
    arity: 1,
    flags: ["noscript", "loading", "stale", "fast", "no_auth", "allow_busy"],
    keys: NO_KEYS,
    acl: ["@fast", "@connection"],
    doc: doc("Resets the connection.", "6.2.0"),
    run: resetCommand,
  },
  {
    name: "client",
    arity: -2,
    flags: [],
    keys: NO_KEYS,
    acl: ["@slow"],
    doc: {
      summary: "A container for client connection commands.",
      since: "2.4.0",
      group: "connection",
      complexity: "Depends on subcommand.",
    },
    subcommands: clientSubcommands,
    run: (ctx, args) => dispatchSubcommand("client", clientSubcommands, ctx, args),
  },
];

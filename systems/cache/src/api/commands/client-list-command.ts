/**
 * CLIENT LIST and CLIENT INFO: who is connected and what each connection is doing, one
 * line per client in Redis 7.2's `key=value` format — what operators grep for a connection
 * leak, a client stuck behind a big reply (`omem`), or the service behind a connection
 * (`name`, `lib-name`). Fields this node has no notion of (pub/sub, MULTI, ACL users, the
 * file descriptor) carry Redis's values for "none" so parsers keep working.
 *
 * @example
 * // CLIENT LIST TYPE normal →
 * // id=3 addr=127.0.0.1:50530 laddr=127.0.0.1:7000 fd=-1 name=api age=12 idle=0 flags=N db=0 … cmd=client|list … resp=2 lib-name=ioredis lib-ver=5.4.1
 */

import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { type ClientState, type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";

/** `cmd=`: the command as Redis names it, `container|sub` for a container's subcommand. */
function commandField(client: ClientState, commands: CommandContext["node"]["commands"]): string {
  const name = client.lastCommand.toLowerCase();
  const spec = commands.get(name);
  if (spec?.subcommands === undefined || client.lastArgument === "")
    return spec === undefined ? "NULL" : name;
  const sub = `${name}|${client.lastArgument.toLowerCase()}`;
  return spec.subcommands.some((candidate) => candidate.name === sub) ? sub : name;
}

/** One client's line, without the newline. */
export function clientLine(ctx: CommandContext, client: ClientState): string {
  const nowMs = ctx.node.clock.monotonicMs();
  const { queryBytes, outputBytes } = client.buffers();
  const fields: [string, string | number][] = [
    ["id", client.id],
    ["addr", client.addr],
    ["laddr", client.laddr],
    ["fd", -1],
    ["name", client.name],
    ["age", Math.floor((nowMs - client.openedAtMs) / 1_000)],
    ["idle", Math.floor((nowMs - client.lastActiveAtMs) / 1_000)],
    ["flags", client.blocked === undefined ? "N" : "b"],
    ["db", 0],
    ["sub", 0],
    ["psub", 0],
    ["ssub", 0],
    ["multi", -1],
    ["qbuf", queryBytes],
    ["qbuf-free", 0],
    ["argv-mem", 0],
    ["multi-mem", 0],
    ["rbs", 0],
    ["rbp", 0],
    ["obl", 0],
    ["oll", 0],
    ["omem", outputBytes],
    ["tot-mem", queryBytes + outputBytes],
    ["events", "r"],
    ["cmd", commandField(client, ctx.node.commands)],
    ["user", "default"],
    ["redir", -1],
    ["resp", client.protocol],
    ["lib-name", client.libName],
    ["lib-ver", client.libVersion],
  ];
  return fields.map(([key, value]) => `${key}=${value}`).join(" ");
}

/** CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id [id …]]. */
function clientList(ctx: CommandContext, args: readonly string[]): void {
  let type: string | undefined;
  let ids: Set<number> | undefined;
  for (let i = 2; i < args.length; i++) {
    const option = args[i]!.toLowerCase();
    if (option === "type" && i + 1 < args.length) {
      type = args[++i]!.toLowerCase();
      if (!["normal", "master", "replica", "slave", "pubsub"].includes(type)) {
        ctx.reply.error(`ERR Unknown client type '${args[i]}'`);
        return;
      }
    } else if (option === "id" && i + 1 < args.length) {
      ids ??= new Set();
      for (i += 1; i < args.length; i++) {
        const id = Number(args[i]);
        if (!Number.isSafeInteger(id) || id <= 0 || !/^\d+$/.test(args[i]!)) {
          ctx.reply.error(`ERR Invalid client ID`);
          return;
        }
        ids.add(id);
      }
    } else {
      ctx.reply.error(REPLY_ERRORS.syntax);
      return;
    }
  }
  // Every connection of this node is a normal client: replicas stream over the cluster bus.
  const lines: string[] = [];
  if (type === undefined || type === "normal") {
    for (const client of ctx.node.clients()) {
      if (ids === undefined || ids.has(client.id)) lines.push(`${clientLine(ctx, client)}\n`);
    }
  }
  ctx.reply.verbatim(lines.join(""));
}

const doc = (summary: string, since: string) =>
  ({
    summary,
    since,
    group: "connection",
    complexity: "O(N) where N is the number of client connections",
  }) as const;

export const clientListSubcommands: readonly CommandSpec[] = [
  {
    name: "client|list",
    arity: -2,
    flags: ["admin", "noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@admin", "@slow", "@dangerous", "@connection"],
    doc: doc("Lists open connections.", "2.4.0"),
    run: clientList,
  },
  {
    name: "client|info",
    arity: 2,
    flags: ["noscript", "loading", "stale"],
    keys: NO_KEYS,
    acl: ["@slow", "@connection"],
    doc: { ...doc("Returns information about the connection.", "6.2.0"), complexity: "O(1)" },
    run: (ctx) => ctx.reply.verbatim(`${clientLine(ctx, ctx.client)}\n`),
  },
];

/** CLIENT HELP's lines for these two, as Redis words them. */
export const clientListHelp: readonly string[] = [
  "INFO",
  "    Return information about the current client connection.",
  "LIST [options ...]",
  "    Return information about client connections. Options:",
  "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
  "      Return clients of specified type.",
  "    * ID <client-id> [client-id ...]",
  "      Return clients of specified IDs only.",
];

/**
 * The string commands that set or change an expiry in the same step as the value, which
 * client libraries still send: SETEX and PSETEX (SET … EX/PX from before Redis 2.6.12) and
 * GETEX (6.2: read the value and set EX/PX/EXAT/PXAT or PERSIST in one round trip, the
 * sliding-expiry session pattern). Their options and errors are Redis's, in Redis's order:
 * GETEX on a missing key answers nil before its time is even validated.
 *
 * @example
 * // SETEX session:9 30 token → OK; GETEX session:9 EX 30 → "token" with the TTL reset to 30 s
 */

import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import { setExpiryAtMs, type TimeUnit } from "../../domain/expire-time.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { parseGetexOptions } from "../../domain/set-options.ts";
import { type CommandContext, type CommandSpec, ONE_KEY } from "./command-spec.ts";

function getexCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  const options = parseGetexOptions(args);
  if (options === undefined) {
    reply.error(REPLY_ERRORS.syntax);
    return;
  }
  const key = args[1]!;
  const value = keyspace.get(key);
  if (value === undefined) {
    reply.nullBulk();
    return;
  }
  const nowMs = ctx.node.clock.nowMs();
  let expiresAtMs: number | undefined;
  if (options.expiry !== undefined) {
    const { raw, unit, relative } = options.expiry;
    const result = setExpiryAtMs(raw, unit, relative, nowMs, "getex");
    if (result.error !== undefined) {
      reply.error(result.error);
      return;
    }
    expiresAtMs = result.atMs;
  }
  reply.bulk(value);
  const entry = keyspace.lookup(key)!;
  // An EXAT/PXAT already past deletes the key, as Redis's checkAlreadyExpired does.
  if (expiresAtMs !== undefined && expiresAtMs <= nowMs) keyspace.delete(key);
  else if (expiresAtMs !== undefined) keyspace.setExpiry(entry, expiresAtMs);
  else if (options.persist) keyspace.setExpiry(entry, NO_EXPIRY);
}

/** SETEX key seconds value / PSETEX key milliseconds value. */
function setexCommand(unit: TimeUnit, name: string) {
  return (ctx: CommandContext, args: readonly string[]): void => {
    const result = setExpiryAtMs(args[2]!, unit, true, ctx.node.clock.nowMs(), name);
    if (result.error !== undefined) {
      ctx.reply.error(result.error);
      return;
    }
    if (ctx.keyspace.set(args[1]!, args[3]!, result.atMs)) ctx.reply.simple("OK");
    else ctx.reply.error(REPLY_ERRORS.oom);
  };
}

const doc = (summary: string, since: string) =>
  ({ summary, since, group: "string", complexity: "O(1)" }) as const;

export const stringExpiryCommands: readonly CommandSpec[] = [
  {
    name: "setex",
    arity: 4,
    flags: ["write", "denyoom"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@slow"],
    doc: doc(
      "Sets the string value and expiration time of a key. Creates the key if it doesn't exist.",
      "2.0.0",
    ),
    run: setexCommand("s", "setex"),
  },
  {
    name: "psetex",
    arity: 4,
    flags: ["write", "denyoom"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@slow"],
    doc: doc(
      "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist.",
      "2.6.0",
    ),
    run: setexCommand("ms", "psetex"),
  },
  {
    name: "getex",
    arity: -2,
    flags: ["write", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc("Returns the string value of a key after setting its expiration time.", "6.2.0"),
    run: getexCommand,
  },
];

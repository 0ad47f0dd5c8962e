/**
 * The string commands of CA-01: GET, SET (EX PX EXAT PXAT NX XX KEEPTTL GET), SETNX, GETDEL,
 * MGET and MSET (many keys, one round trip), INCR/INCRBY/DECR/DECRBY and INCRBYFLOAT (atomic:
 * the node runs one command at a time, so read-modify-write cannot interleave), APPEND and
 * STRLEN. Replies and errors are Redis's; a write maxmemory cannot make room for answers -OOM.
 * Every write goes through the keyspace's `set`, so maxmemory accounting stays exact, and the
 * cluster's dispatch hook streams the key's resulting state to replicas as it does for SET.
 *
 * @example
 * // SET lock:42 token NX EX 5 → OK the first time, nil while the lock is held (CA-20's lease)
 */

import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import { setExpiryAtMs } from "../../domain/expire-time.ts";
import { addInt64, negateInt64, parseInt64 } from "../../domain/integer-arg.ts";
import { KEEP_TTL } from "../../domain/keyspace.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { parseSetOptions } from "../../domain/set-options.ts";
import { type CommandContext, type CommandSpec, ONE_KEY } from "./command-spec.ts";
import { addLongDouble, formatLongDouble, INFINITE, parseLongDouble } from "./long-double.ts";

function getCommand(ctx: CommandContext, args: readonly string[]): void {
  const value = ctx.keyspace.get(args[1]!);
  if (value === undefined) ctx.reply.nullBulk();
  else ctx.reply.bulk(value);
}

function setCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  if (args.length === 3) {
    // The hot path: a plain SET, no options to parse.
    if (keyspace.set(args[1]!, args[2]!, NO_EXPIRY)) reply.simple("OK");
    else reply.error(REPLY_ERRORS.oom);
    return;
  }
  const options = parseSetOptions(args);
  if (options === undefined) {
    reply.error(REPLY_ERRORS.syntax);
    return;
  }
  let expiresAtMs = options.keepTtl ? KEEP_TTL : NO_EXPIRY;
  if (options.expiry !== undefined) {
    const { raw, unit, relative } = options.expiry;
    const result = setExpiryAtMs(raw, unit, relative, ctx.node.clock.nowMs(), "set");
    if (result.error !== undefined) {
      reply.error(result.error);
      return;
    }
    expiresAtMs = result.atMs;
  }
  const key = args[1]!;
  const old = options.get ? keyspace.get(key) : undefined;
  const found = options.get ? old !== undefined : keyspace.lookup(key) !== undefined;
  if ((options.condition === "nx" && found) || (options.condition === "xx" && !found)) {
    if (old !== undefined) reply.bulk(old);
    else reply.nullBulk();
    return;
  }
  if (!keyspace.set(key, args[2]!, expiresAtMs)) {
    reply.error(REPLY_ERRORS.oom);
    return;
  }
  if (!options.get) reply.simple("OK");
  else if (old === undefined) reply.nullBulk();
  else reply.bulk(old);
}

function getdelCommand(ctx: CommandContext, args: readonly string[]): void {
  const value = ctx.keyspace.get(args[1]!);
  if (value === undefined) {
    ctx.reply.nullBulk();
    return;
  }
  ctx.keyspace.delete(args[1]!);
  ctx.reply.bulk(value);
}

function mgetCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  reply.arrayHeader(args.length - 1);
  for (let i = 1; i < args.length; i++) {
    const value = keyspace.get(args[i]!);
    if (value === undefined) reply.nullBulk();
    else reply.bulk(value);
  }
}

function msetCommand(ctx: CommandContext, args: readonly string[]): void {
  if (args.length % 2 === 0) {
    ctx.reply.error("ERR wrong number of arguments for 'mset' command");
    return;
  }
  const keys: string[] = [];
  const values: string[] = [];
  for (let i = 1; i < args.length; i += 2) {
    keys.push(args[i]!);
    values.push(args[i + 1]!);
  }
  if (ctx.keyspace.setMany(keys, values)) ctx.reply.simple("OK");
  else ctx.reply.error(REPLY_ERRORS.oom);
}

/** INCRBY's core: the stored value must be an int64, the sum must stay one; the key keeps its TTL. */
function incrementBy(ctx: CommandContext, key: string, delta: number | bigint): void {
  const entry = ctx.keyspace.lookup(key);
  let current: number | bigint = 0;
  if (entry !== undefined) {
    const parsed = parseInt64(entry.value);
    if (parsed === undefined) {
      ctx.reply.error(REPLY_ERRORS.notInteger);
      return;
    }
    current = parsed;
  }
  const next = addInt64(current, delta);
  if (next === undefined) {
    ctx.reply.error(REPLY_ERRORS.overflow);
    return;
  }
  if (!ctx.keyspace.set(key, String(next), KEEP_TTL)) {
    ctx.reply.error(REPLY_ERRORS.oom);
    return;
  }
  ctx.reply.integer(next);
}

function incrbyCommand(ctx: CommandContext, args: readonly string[]): void {
  const delta = parseInt64(args[2]!);
  if (delta === undefined) {
    ctx.reply.error(REPLY_ERRORS.notInteger);
    return;
  }
  incrementBy(ctx, args[1]!, delta);
}

function decrbyCommand(ctx: CommandContext, args: readonly string[]): void {
  const delta = parseInt64(args[2]!);
  if (delta === undefined) {
    ctx.reply.error(REPLY_ERRORS.notInteger);
    return;
  }
  const negated = negateInt64(delta);
  if (negated === undefined) {
    ctx.reply.error(REPLY_ERRORS.decrementOverflow);
    return;
  }
  incrementBy(ctx, args[1]!, negated);
}

function setnxCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  if (keyspace.lookup(args[1]!) !== undefined) {
    reply.integer(0);
    return;
  }
  if (keyspace.set(args[1]!, args[2]!, NO_EXPIRY)) reply.integer(1);
  else reply.error(REPLY_ERRORS.oom);
}

function appendCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  const value = (keyspace.lookup(args[1]!)?.value ?? "") + args[2]!;
  // KEEP_TTL: an append keeps the key's expiry; a new key gets none.
  if (keyspace.set(args[1]!, value, KEEP_TTL)) reply.integer(value.length);
  else reply.error(REPLY_ERRORS.oom);
}

function strlenCommand(ctx: CommandContext, args: readonly string[]): void {
  // A read like GET (Redis's lookupKeyRead): it counts as a hit or miss and as an access.
  ctx.reply.integer(ctx.keyspace.get(args[1]!)?.length ?? 0);
}

/** INCRBYFLOAT in long double like Redis (long-double.ts); the key keeps its TTL. */
function incrbyfloatCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  const stored = keyspace.lookup(args[1]!)?.value ?? "0";
  const current = parseLongDouble(stored);
  const increment = parseLongDouble(args[2]!);
  if (current === undefined || increment === undefined) {
    reply.error(REPLY_ERRORS.notFloat);
    return;
  }
  const sum = current === INFINITE || increment === INFINITE ? INFINITE : addLongDouble(current, increment);
  if (sum === INFINITE) {
    reply.error(REPLY_ERRORS.floatOverflow);
    return;
  }
  const text = formatLongDouble(sum);
  if (keyspace.set(args[1]!, text, KEEP_TTL)) reply.bulk(text);
  else reply.error(REPLY_ERRORS.oom);
}

const doc = (summary: string, since: string, complexity = "O(1)") =>
  ({ summary, since, group: "string", complexity }) as const;

export const stringCommands: readonly CommandSpec[] = [
  {
    name: "get",
    arity: 2,
    flags: ["readonly", "fast"],
    keys: ONE_KEY,
    acl: ["@read", "@string", "@fast"],
    doc: doc("Returns the string value of a key.", "1.0.0"),
    run: getCommand,
  },
  {
    name: "set",
    arity: -3,
    flags: ["write", "denyoom"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@slow"],
    doc: doc(
      "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
      "1.0.0",
    ),
    run: setCommand,
  },
  {
    name: "getdel",
    arity: 2,
    flags: ["write", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc("Returns the string value of a key after deleting the key.", "6.2.0"),
    run: getdelCommand,
  },
  {
    name: "mget",
    arity: -2,
    flags: ["readonly", "fast"],
    keys: { first: 1, last: -1, step: 1 },
    acl: ["@read", "@string", "@fast"],
    doc: doc(
      "Atomically returns the string values of one or more keys.",
      "1.0.0",
      "O(N) where N is the number of keys to retrieve.",
    ),
    tips: ["request_policy:multi_shard"],
    run: mgetCommand,
  },
  {
    name: "mset",
    arity: -3,
    flags: ["write", "denyoom"],
    keys: { first: 1, last: -1, step: 2 },
    acl: ["@write", "@string", "@slow"],
    doc: doc(
      "Atomically creates or modifies the string values of one or more keys.",
      "1.0.1",
      "O(N) where N is the number of keys to set.",
    ),
    run: msetCommand,
  },
  {
    name: "incr",
    arity: 2,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc(
      "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
      "1.0.0",
    ),
    run: (ctx, args) => incrementBy(ctx, args[1]!, 1),
  },
  {
    name: "decr",
    arity: 2,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc(
      "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
      "1.0.0",
    ),
    run: (ctx, args) => incrementBy(ctx, args[1]!, -1),
  },
  {
    name: "incrby",
    arity: 3,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc(
      "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
      "1.0.0",
    ),
    run: incrbyCommand,
  },
  {
    name: "decrby",
    arity: 3,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc(
      "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
      "1.0.0",
    ),
    run: decrbyCommand,
  },
  {
    name: "setnx",
    arity: 3,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc("Set the string value of a key only when the key doesn't exist.", "1.0.0"),
    run: setnxCommand,
  },
  {
    name: "append",
    arity: 3,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc(
      "Appends a string to the value of a key. Creates the key if it doesn't exist.",
      "2.0.0",
      "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
    ),
    run: appendCommand,
  },
  {
    name: "strlen",
    arity: 2,
    flags: ["readonly", "fast"],
    keys: ONE_KEY,
    acl: ["@read", "@string", "@fast"],
    doc: doc("Returns the length of a string value.", "2.2.0"),
    run: strlenCommand,
  },
  {
    name: "incrbyfloat",
    arity: 3,
    flags: ["write", "denyoom", "fast"],
    keys: ONE_KEY,
    acl: ["@write", "@string", "@fast"],
    doc: doc(
      "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
      "2.6.0",
    ),
    run: incrbyfloatCommand,
  },
];

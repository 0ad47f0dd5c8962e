/**
 * Keyspace commands: DEL/UNLINK, EXISTS, TOUCH, TYPE, RANDOMKEY, the EXPIRE family with 7.0's
 * NX/XX/GT/LT, TTL/PTTL, EXPIRETIME/PEXPIRETIME, PERSIST, DBSIZE, FLUSHALL/FLUSHDB (SCAN and
 * KEYS walk the keyspace: scan-command.ts). TTL is the consistency tool of CA-12:
 * expiry is exact to the millisecond for readers (lazy expiry), and memory is reclaimed
 * by the active cycle.
 *
 * @example
 * // EXPIRE k 10 GT → 0 on a key without TTL (no TTL counts as infinite), as in Redis 7
 */

import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import { expireAtMs, type TimeUnit } from "../../domain/expire-time.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { type CommandContext, type CommandSpec, ONE_KEY } from "./command-spec.ts";

const ALL_KEYS = { first: 1, last: -1, step: 1 } as const;

function delCommand(ctx: CommandContext, args: readonly string[]): void {
  let deleted = 0;
  for (let i = 1; i < args.length; i++) if (ctx.keyspace.delete(args[i]!)) deleted += 1;
  ctx.reply.integer(deleted);
}

function existsCommand(ctx: CommandContext, args: readonly string[]): void {
  // Redis counts a key once per mention: EXISTS k k → 2.
  let found = 0;
  for (let i = 1; i < args.length; i++) if (ctx.keyspace.lookup(args[i]!) !== undefined) found += 1;
  ctx.reply.integer(found);
}

function touchCommand(ctx: CommandContext, args: readonly string[]): void {
  // An access like GET (Redis's lookupKeyRead): it refreshes LRU/LFU and counts a hit or miss.
  let touched = 0;
  for (let i = 1; i < args.length; i++) if (ctx.keyspace.get(args[i]!) !== undefined) touched += 1;
  ctx.reply.integer(touched);
}

function randomkeyCommand(ctx: CommandContext): void {
  const key = ctx.keyspace.randomKey();
  if (key === undefined) ctx.reply.nullBulk();
  else ctx.reply.bulk(key);
}

interface ExpireFlags {
  readonly nx: boolean;
  readonly xx: boolean;
  readonly gt: boolean;
  readonly lt: boolean;
}

/** EXPIRE's trailing options, or the error text Redis answers. */
function parseExpireFlags(args: readonly string[]): ExpireFlags | string {
  const flags = { nx: false, xx: false, gt: false, lt: false };
  for (let i = 3; i < args.length; i++) {
    const option = args[i]!.toLowerCase();
    if (option === "nx" || option === "xx" || option === "gt" || option === "lt") flags[option] = true;
    else return `ERR Unsupported option ${args[i]}`;
  }
  if (flags.nx && (flags.xx || flags.gt || flags.lt)) {
    return "ERR NX and XX, GT or LT options at the same time are not compatible";
  }
  if (flags.gt && flags.lt) return "ERR GT and LT options at the same time are not compatible";
  return flags;
}

/** Whether the options allow replacing `current` (NO_EXPIRY = none, counted as infinite) by `next`. */
function expireAllowed(flags: ExpireFlags, current: number, next: number): boolean {
  const persistent = current === NO_EXPIRY;
  if (flags.nx && !persistent) return false;
  if (flags.xx && persistent) return false;
  if (flags.gt && (persistent || next <= current)) return false;
  if (flags.lt && !persistent && next >= current) return false;
  return true;
}

function expireCommand(unit: TimeUnit, relative: boolean, name: string) {
  return (ctx: CommandContext, args: readonly string[]): void => {
    const { keyspace, reply } = ctx;
    const flags = parseExpireFlags(args);
    if (typeof flags === "string") {
      reply.error(flags);
      return;
    }
    const nowMs = ctx.node.clock.nowMs();
    const when = expireAtMs(args[2]!, unit, relative, nowMs, name);
    if (when.error !== undefined) {
      reply.error(when.error);
      return;
    }
    const entry = keyspace.lookup(args[1]!);
    if (entry === undefined || !expireAllowed(flags, entry.expiresAtMs, when.atMs)) {
      reply.integer(0);
      return;
    }
    // A time already past deletes the key now (Redis's checkAlreadyExpired), and still answers 1.
    if (when.atMs <= nowMs) keyspace.delete(args[1]!);
    else keyspace.setExpiry(entry, when.atMs);
    reply.integer(1);
  };
}

function ttlCommand(unit: TimeUnit) {
  return (ctx: CommandContext, args: readonly string[]): void => {
    const entry = ctx.keyspace.lookup(args[1]!);
    if (entry === undefined) {
      ctx.reply.integer(-2);
      return;
    }
    if (entry.expiresAtMs === NO_EXPIRY) {
      ctx.reply.integer(-1);
      return;
    }
    const leftMs = Math.max(0, entry.expiresAtMs - ctx.node.clock.nowMs());
    // Redis rounds TTL to the nearest second: (ms + 500) / 1000.
    ctx.reply.integer(unit === "ms" ? leftMs : Math.floor((leftMs + 500) / 1000));
  };
}

/** EXPIRETIME / PEXPIRETIME: the absolute expiry; -1 without one, -2 for a missing key. */
function expiretimeCommand(unit: TimeUnit) {
  return (ctx: CommandContext, args: readonly string[]): void => {
    const entry = ctx.keyspace.lookup(args[1]!);
    if (entry === undefined) ctx.reply.integer(-2);
    else if (entry.expiresAtMs === NO_EXPIRY) ctx.reply.integer(-1);
    // Redis rounds to the nearest second, as TTL does.
    else ctx.reply.integer(unit === "ms" ? entry.expiresAtMs : Math.floor((entry.expiresAtMs + 500) / 1000));
  };
}

function persistCommand(ctx: CommandContext, args: readonly string[]): void {
  const entry = ctx.keyspace.lookup(args[1]!);
  if (entry === undefined || entry.expiresAtMs === NO_EXPIRY) {
    ctx.reply.integer(0);
    return;
  }
  ctx.keyspace.setExpiry(entry, NO_EXPIRY);
  ctx.reply.integer(1);
}

function flushCommand(ctx: CommandContext, args: readonly string[]): void {
  if (args.length > 2) {
    ctx.reply.error(REPLY_ERRORS.syntax);
    return;
  }
  if (args.length === 2) {
    const mode = args[1]!.toLowerCase();
    if (mode !== "async" && mode !== "sync") {
      ctx.reply.error(REPLY_ERRORS.syntax);
      return;
    }
  }
  ctx.keyspace.flush();
  ctx.reply.simple("OK");
}

const doc = (summary: string, since: string, complexity = "O(1)", group = "generic") =>
  ({ summary, since, group, complexity }) as const;

function expireSpec(
  name: string,
  unit: TimeUnit,
  relative: boolean,
  summary: string,
  since: string,
): CommandSpec {
  return {
    name,
    arity: -3,
    flags: ["write", "fast"],
    keys: ONE_KEY,
    acl: ["@keyspace", "@write", "@fast"],
    doc: doc(summary, since),
    run: expireCommand(unit, relative, name),
  };
}

function ttlSpec(
  name: string,
  summary: string,
  since: string,
  run: (ctx: CommandContext, args: readonly string[]) => void,
): CommandSpec {
  return {
    name,
    arity: 2,
    flags: ["readonly", "fast"],
    keys: ONE_KEY,
    acl: ["@keyspace", "@read", "@fast"],
    doc: doc(summary, since),
    run,
  };
}

export const keyCommands: readonly CommandSpec[] = [
  {
    name: "del",
    arity: -2,
    flags: ["write"],
    keys: ALL_KEYS,
    acl: ["@keyspace", "@write", "@slow"],
    doc: doc(
      "Deletes one or more keys.",
      "1.0.0",
      "O(N) where N is the number of keys that will be removed.",
    ),
    run: delCommand,
  },
  {
    name: "unlink",
    arity: -2,
    flags: ["write", "fast"],
    keys: ALL_KEYS,
    acl: ["@keyspace", "@write", "@fast"],
    doc: doc("Asynchronously deletes one or more keys.", "4.0.0", "O(1) for each key removed."),
    run: delCommand,
  },
  {
    name: "exists",
    arity: -2,
    flags: ["readonly", "fast"],
    keys: ALL_KEYS,
    acl: ["@keyspace", "@read", "@fast"],
    doc: doc(
      "Determines whether one or more keys exist.",
      "1.0.0",
      "O(N) where N is the number of keys to check.",
    ),
    run: existsCommand,
  },
  {
    name: "type",
    arity: 2,
    flags: ["readonly", "fast"],
    keys: ONE_KEY,
    acl: ["@keyspace", "@read", "@fast"],
    doc: doc("Determines the type of value stored at a key.", "1.0.0"),
    run: (ctx, args) => ctx.reply.simple(ctx.keyspace.lookup(args[1]!) === undefined ? "none" : "string"),
  },
  expireSpec("expire", "s", true, "Sets the expiration time of a key in seconds.", "1.0.0"),
  expireSpec("pexpire", "ms", true, "Sets the expiration time of a key in milliseconds.", "2.6.0"),
  expireSpec("expireat", "s", false, "Sets the expiration time of a key to a Unix timestamp.", "1.2.0"),
  expireSpec(
    "pexpireat",
    "ms",
    false,
    "Sets the expiration time of a key to a Unix milliseconds timestamp.",
    "2.6.0",
  ),
  ttlSpec("ttl", "Returns the expiration time in seconds of a key.", "1.0.0", ttlCommand("s")),
  ttlSpec("pttl", "Returns the expiration time in milliseconds of a key.", "2.6.0", ttlCommand("ms")),
  ttlSpec(
    "expiretime",
    "Returns the expiration time of a key as a Unix timestamp.",
    "7.0.0",
    expiretimeCommand("s"),
  ),
  ttlSpec(
    "pexpiretime",
    "Returns the expiration time of a key as a Unix milliseconds timestamp.",
    "7.0.0",
    expiretimeCommand("ms"),
  ),
  {
    name: "touch",
    arity: -2,
    flags: ["readonly", "fast"],
    keys: ALL_KEYS,
    acl: ["@keyspace", "@read", "@fast"],
    doc: doc(
      "Returns the number of existing keys out of those specified after updating the time they were last accessed.",
      "3.2.1",
      "O(N) where N is the number of keys that will be touched.",
    ),
    tips: ["request_policy:multi_shard", "response_policy:agg_sum"],
    run: touchCommand,
  },
  {
    name: "randomkey",
    arity: 1,
    flags: ["readonly"],
    keys: { first: 0, last: 0, step: 0 },
    acl: ["@keyspace", "@read", "@slow"],
    doc: doc("Returns a random key name from the database.", "1.0.0"),
    tips: ["request_policy:all_shards", "nondeterministic_output"],
    run: randomkeyCommand,
  },
  {
    name: "persist",
    arity: 2,
    flags: ["write", "fast"],
    keys: ONE_KEY,
    acl: ["@keyspace", "@write", "@fast"],
    doc: doc("Removes the expiration time of a key.", "2.2.0"),
    run: persistCommand,
  },
  {
    name: "dbsize",
    arity: 1,
    flags: ["readonly", "fast"],
    keys: { first: 0, last: 0, step: 0 },
    acl: ["@keyspace", "@read", "@fast"],
    doc: doc("Returns the number of keys in the database.", "1.0.0", "O(1)", "server"),
    run: (ctx) => ctx.reply.integer(ctx.keyspace.size),
  },
  {
    name: "flushall",
    arity: -1,
    flags: ["write"],
    keys: { first: 0, last: 0, step: 0 },
    acl: ["@keyspace", "@write", "@slow", "@dangerous"],
    doc: doc(
      "Removes all keys from all databases.",
      "1.0.0",
      "O(N) where N is the total number of keys in all databases",
      "server",
    ),
    run: flushCommand,
  },
  {
    name: "flushdb",
    arity: -1,
    flags: ["write"],
    keys: { first: 0, last: 0, step: 0 },
    acl: ["@keyspace", "@write", "@slow", "@dangerous"],
    doc: doc(
      "Remove all keys from the current database.",
      "1.0.0",
      "O(N) where N is the number of keys in the selected database",
      "server",
    ),
    run: flushCommand,
  },
];

/**
 * OBJECT: what the node knows about one key's value, without counting as an access —
 * `redis-cli --hotkeys` reads OBJECT FREQ for every key it scans (CA-18).
 *
 * - FREQ: the key's LFU counter after decay (Redis's LFUDecrAndReturn), only under an LFU
 *   policy; IDLETIME: seconds since the last access, only under any other policy. The entry's
 *   one `access` field holds one or the other (cache-entry.ts), so each answers Redis's error
 *   under the wrong policy.
 * - ENCODING: what Redis would use for the value: "int" for an int64 of at most 20 chars,
 *   "embstr" up to 44 bytes, "raw" above. Redis also turns a value APPENDed to into "raw"
 *   whatever its length; this node stores no encoding, so it answers from the value alone.
 * - REFCOUNT: 1 (no shared objects here; Redis answers 2147483647 for its shared small ints).
 *
 * The container's key position is its subcommand's (argument 2), so cluster routing sends
 * OBJECT FREQ k to k's slot; OBJECT HELP has no key and runs anywhere.
 *
 * @example
 * // under allkeys-lfu: SET k v → OBJECT FREQ k → 5 (LFU_INIT_VAL)
 */

import type { CacheEntry } from "../../domain/cache-entry.ts";
import { lruIdleMs } from "../../domain/eviction-lru.ts";
import { evictionPolicy } from "../../domain/eviction-policy.ts";
import { parseInt64 } from "../../domain/integer-arg.ts";
import { lfuDecayed } from "../../domain/lfu-counter.ts";
import { type CommandContext, type CommandSpec, SUBCOMMAND_KEY } from "./command-spec.ts";
import { dispatchSubcommand, helpSubcommand } from "./command-table.ts";

/** Redis's OBJ_ENCODING_EMBSTR_SIZE_LIMIT and the longest int64 text. */
const EMBSTR_MAX_BYTES = 44;
const INT_MAX_CHARS = 20;

const NOT_LFU =
  "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";
const IS_LFU =
  "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.";

const OBJECT_HELP = [
  "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "ENCODING <key>",
  "    Return the kind of internal representation used in order to store the value",
  "    associated with a <key>.",
  "FREQ <key>",
  "    Return the access frequency index of the <key>. The returned integer is",
  "    proportional to the logarithm of the recent access frequency of the key.",
  "IDLETIME <key>",
  "    Return the idle time of the <key>, that is the approximated number of",
  "    seconds elapsed since the last access to the key.",
  "REFCOUNT <key>",
  "    Return the number of references of the value associated with the specified",
  "    <key>.",
  "HELP",
  "    Prints this help.",
];

/** Redis's encoding for a string value. */
export function stringEncoding(value: string): "int" | "embstr" | "raw" {
  if (value.length <= INT_MAX_CHARS && parseInt64(value) !== undefined) return "int";
  return value.length <= EMBSTR_MAX_BYTES ? "embstr" : "raw";
}

function isLfu(ctx: CommandContext): boolean {
  return evictionPolicy(ctx.keyspace.policy).rank === "lfu";
}

/** A subcommand on one key: nil when the key is missing (checked first, as in Redis), else `answer`. */
function onKey(answer: (ctx: CommandContext, entry: CacheEntry) => void) {
  return (ctx: CommandContext, args: readonly string[]): void => {
    const entry = ctx.keyspace.lookup(args[2]!);
    if (entry === undefined) ctx.reply.nullBulk();
    else answer(ctx, entry);
  };
}

const subDoc = (summary: string, since: string, complexity = "O(1)") =>
  ({ summary, since, group: "generic", complexity }) as const;

function keySubcommand(
  name: string,
  summary: string,
  since: string,
  answer: (ctx: CommandContext, entry: CacheEntry) => void,
): CommandSpec {
  return {
    name: `object|${name}`,
    arity: 3,
    flags: ["readonly"],
    keys: SUBCOMMAND_KEY,
    acl: ["@keyspace", "@read", "@slow"],
    doc: subDoc(summary, since),
    run: onKey(answer),
  };
}

const objectSubcommands: readonly CommandSpec[] = [
  keySubcommand("encoding", "Returns the internal encoding of a Redis object.", "2.2.3", (ctx, entry) =>
    ctx.reply.bulk(stringEncoding(entry.value)),
  ),
  keySubcommand(
    "freq",
    "Returns the logarithmic access frequency counter of a Redis object.",
    "4.0.0",
    (ctx, entry) => {
      if (isLfu(ctx)) ctx.reply.integer(lfuDecayed(entry.access, ctx.node.clock.nowMs(), ctx.keyspace.lfu));
      else ctx.reply.error(NOT_LFU);
    },
  ),
  keySubcommand(
    "idletime",
    "Returns the time since the last access to a Redis object.",
    "2.2.3",
    (ctx, entry) => {
      if (isLfu(ctx)) ctx.reply.error(IS_LFU);
      else ctx.reply.integer(Math.floor(lruIdleMs(entry.access, ctx.node.clock.nowMs()) / 1000));
    },
  ),
  keySubcommand("refcount", "Returns the reference count of a value of a key.", "2.2.3", (ctx) =>
    ctx.reply.integer(1),
  ),
  helpSubcommand("object", OBJECT_HELP, { since: "6.2.0", group: "generic" }, ["@keyspace", "@slow"]),
];

export const objectCommand: CommandSpec = {
  name: "object",
  arity: -2,
  flags: [],
  keys: SUBCOMMAND_KEY,
  acl: ["@slow"],
  doc: {
    summary: "A container for object introspection commands.",
    since: "2.2.3",
    group: "generic",
    complexity: "Depends on subcommand.",
  },
  subcommands: objectSubcommands,
  run: (ctx, args) => dispatchSubcommand("object", objectSubcommands, ctx, args),
};

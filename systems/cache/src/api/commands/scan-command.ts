/**
 * SCAN and KEYS: walking the keyspace, what `redis-cli --scan / --bigkeys / --memkeys /
 * --hotkeys` do to find big and hot keys (CA-18, CA-19) without blocking the node.
 *
 * SCAN's cursor is a hash slot (CRC16 with hash tags, as the cluster's `keySlot`): the keyspace
 * indexes every key by slot (slot-index.ts). A call returns whole slots, from the cursor's
 * slot upward, until it has walked about COUNT keys or visited `COUNT × SLOTS_PER_COUNT`
 * slots (so an almost empty keyspace still answers fast), and answers the next slot as the
 * cursor, 0 once the last slot is done.
 *
 * The guarantee: a full iteration (cursor 0 → … → 0) returns every key that existed for the
 * whole iteration, exactly once: a key never changes slot and each slot is returned whole,
 * once. A key created or removed meanwhile may or may not appear. Expired keys are never
 * returned (they are collected on the way, like a read). MATCH uses Redis's glob matcher and
 * TYPE filters by type (only "string" exists here); like Redis, both filter after the walk, so
 * a call may return fewer keys than COUNT, or none, with a non-zero cursor. In cluster mode a
 * node returns its own keys (those of the slots it holds), as Redis Cluster does.
 *
 * KEYS pattern walks every key at once (O(n) and blocking, as in Redis: for operators, not for
 * application code).
 *
 * @example
 * // SCAN 0 MATCH user:* COUNT 100 → ["4213", ["user:7", "user:12", …]]
 */

import { parseInt64 } from "../../domain/integer-arg.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { SLOT_COUNT } from "../../domain/slot-ranges.ts";
import { type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";
import { globMatch } from "./glob-match.ts";

/** Redis's default COUNT. */
const DEFAULT_COUNT = 10;
/** Slots one call may visit per unit of COUNT (Redis's SCAN visits at most COUNT × 10 buckets). */
const SLOTS_PER_COUNT = 10;
/** Largest cursor strtoul accepts (Redis answers "invalid cursor" above it). */
const MAX_CURSOR = 2n ** 64n - 1n;
const CURSOR_TEXT = /^[+-]?\d*$/;

interface ScanOptions {
  readonly count: number;
  readonly pattern: string | undefined;
  readonly type: string | undefined;
}

/** The cursor as Redis's strtoul reads it (a negative one wraps around: past the last slot). */
function parseCursor(text: string): number | undefined {
  if (!CURSOR_TEXT.test(text)) return undefined;
  const digits = text.replace(/^[+-]/, "");
  const value = digits === "" ? 0n : BigInt(digits);
  if (value > MAX_CURSOR) return undefined;
  if (text.startsWith("-") && value !== 0n) return SLOT_COUNT;
  return value >= BigInt(SLOT_COUNT) ? SLOT_COUNT : Number(value);
}

/** SCAN's options after the cursor, or the error text Redis answers. */
function parseScanOptions(args: readonly string[]): ScanOptions | string {
  let count = DEFAULT_COUNT;
  let pattern: string | undefined;
  let type: string | undefined;
  for (let i = 2; i < args.length; i += 2) {
    const option = args[i]!.toLowerCase();
    if (i + 1 >= args.length) return REPLY_ERRORS.syntax;
    const value = args[i + 1]!;
    if (option === "count") {
      const parsed = parseInt64(value);
      if (parsed === undefined) return REPLY_ERRORS.notInteger;
      if (parsed < 1) return REPLY_ERRORS.syntax;
      count = typeof parsed === "bigint" ? Number.MAX_SAFE_INTEGER : parsed;
    } else if (option === "match") {
      // "*" matches everything: skip the matcher, as Redis does.
      pattern = value === "*" ? undefined : value;
    } else if (option === "type") {
      type = value.toLowerCase();
    } else {
      return REPLY_ERRORS.syntax;
    }
  }
  return { count, pattern, type };
}

function scanCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  const cursor = parseCursor(args[1]!);
  if (cursor === undefined) {
    reply.error("ERR invalid cursor");
    return;
  }
  const options = parseScanOptions(args);
  if (typeof options === "string") {
    reply.error(options);
    return;
  }
  const index = keyspace.slotIndex;
  const slotBudget = Math.min(SLOT_COUNT, options.count * SLOTS_PER_COUNT);
  const walked: string[] = [];
  let slot = cursor;
  for (
    let visited = 0;
    slot < SLOT_COUNT && visited < slotBudget && walked.length < options.count;
    visited++
  ) {
    const keys = index.count(slot);
    if (keys > 0) walked.push(...index.keys(slot, keys));
    slot += 1;
  }
  // Filters run after the walk: lookup may collect an expired key, which changes the slot's set.
  // Every value here is a string: any other TYPE matches nothing.
  const found: string[] = [];
  if (options.type === undefined || options.type === "string") {
    for (const key of walked) {
      if (options.pattern !== undefined && !globMatch(options.pattern, key)) continue;
      if (keyspace.lookup(key) !== undefined) found.push(key);
    }
  }
  reply.arrayHeader(2);
  reply.bulk(slot >= SLOT_COUNT ? "0" : String(slot));
  reply.arrayHeader(found.length);
  for (const key of found) reply.bulk(key);
}

function keysCommand(ctx: CommandContext, args: readonly string[]): void {
  const { keyspace, reply } = ctx;
  const pattern = args[1]!;
  const everything = pattern === "*";
  const matched: string[] = [];
  for (const key of keyspace.slotIndex.all()) if (everything || globMatch(pattern, key)) matched.push(key);
  const found = matched.filter((key) => keyspace.lookup(key) !== undefined);
  reply.arrayHeader(found.length);
  for (const key of found) reply.bulk(key);
}

export const scanCommands: readonly CommandSpec[] = [
  {
    name: "scan",
    arity: -2,
    flags: ["readonly"],
    keys: NO_KEYS,
    acl: ["@keyspace", "@read", "@slow"],
    doc: {
      summary: "Iterates over the key names in the database.",
      since: "2.8.0",
      group: "generic",
      complexity:
        "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
    },
    tips: ["nondeterministic_output", "request_policy:special"],
    run: scanCommand,
  },
  {
    name: "keys",
    arity: 2,
    flags: ["readonly"],
    keys: NO_KEYS,
    acl: ["@keyspace", "@read", "@slow", "@dangerous"],
    doc: {
      summary: "Returns all key names that match a pattern.",
      since: "1.0.0",
      group: "generic",
      complexity:
        "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
    },
    tips: ["request_policy:all_shards", "nondeterministic_output_order"],
    run: keysCommand,
  },
];

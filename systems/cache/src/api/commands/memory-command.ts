/**
 * MEMORY STATS: Redis's report of where memory goes, with this node's truth in it — used_memory
 * (what maxmemory accounts) beside the process's RSS and Node's own split (V8 heap used and
 * total, external, ArrayBuffers; the value arena's chunks and the records' field arrays).
 *
 * MEMORY USAGE key [SAMPLES n]: the bytes this node accounts for the key toward maxmemory
 * (key + value + the per-entry overhead, cache-entry.ts) — the number `used_memory` sums and
 * `redis-cli --memkeys` ranks keys by (CA-19). SAMPLES is accepted and validated as Redis
 * does; a string has nothing nested to sample. MEMORY HELP lists what is served.
 *
 * The container's key position is USAGE's key (argument 2), so cluster routing sends it to
 * the key's slot; MEMORY HELP has no key and runs anywhere.
 *
 * @example
 * // SET user:1 hello → MEMORY USAGE user:1 → 6 + 5 + ENTRY_OVERHEAD_BYTES
 */

import { ENTRY_OVERHEAD_BYTES, entryBytes } from "../../domain/cache-entry.ts";
import { parseInt64 } from "../../domain/integer-arg.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import { type CommandContext, type CommandSpec, SUBCOMMAND_KEY } from "./command-spec.ts";
import { dispatchSubcommand, helpSubcommand } from "./command-table.ts";

const MEMORY_HELP = [
  "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
  "STATS",
  "    Return information about the memory usage of the server.",
  "USAGE <key> [SAMPLES <count>]",
  "    Return memory in bytes used by <key> and its value. Nested values are",
  "    sampled up to <count> times (default: 5, 0 means sample all).",
  "HELP",
  "    Prints this help.",
];

/** MEMORY USAGE's arguments after the key, checked as Redis does; undefined when valid. */
function usageArgsError(args: readonly string[]): string | undefined {
  if (args.length === 3) return undefined;
  if (args.length !== 5 || args[3]!.toLowerCase() !== "samples") return REPLY_ERRORS.syntax;
  const samples = parseInt64(args[4]!);
  if (samples === undefined) return REPLY_ERRORS.notInteger;
  return samples < 0 ? REPLY_ERRORS.syntax : undefined;
}

function usageCommand(ctx: CommandContext, args: readonly string[]): void {
  const error = usageArgsError(args);
  if (error !== undefined) {
    ctx.reply.error(error);
    return;
  }
  const entry = ctx.keyspace.lookup(args[2]!);
  if (entry === undefined) ctx.reply.nullBulk();
  else ctx.reply.integer(entryBytes(entry.key, entry.value));
}

/** MEMORY STATS's fields, Redis's names first, then this node's own. */
function statsFields(ctx: CommandContext): Array<[string, number | string]> {
  const node = ctx.node.stats();
  const { keys } = ctx.keyspace.stats;
  const used = ctx.keyspace.usedBytes;
  const overhead = keys * ENTRY_OVERHEAD_BYTES;
  const { arenaBytes, fieldBytes } = ctx.keyspace.recordBytes;
  const ratio = (a: number, b: number) => (b === 0 ? "0" : (a / b).toFixed(4));
  return [
    ["peak.allocated", Math.max(node.usedMemoryPeakBytes, used)],
    ["total.allocated", used],
    ["startup.allocated", 0],
    ["overhead.total", overhead],
    ["keys.count", keys],
    ["keys.bytes-per-key", keys === 0 ? 0 : Math.floor(used / keys)],
    ["dataset.bytes", used - overhead],
    ["dataset.percentage", ratio(100 * (used - overhead), used)],
    ["peak.percentage", ratio(100 * used, Math.max(node.usedMemoryPeakBytes, used))],
    ["allocator.resident", node.rssBytes],
    ["fragmentation", ratio(node.rssBytes, used)],
    ["fragmentation.bytes", node.rssBytes - used],
    ["node.heap.used", node.heapUsedBytes],
    ["node.heap.total", node.heapTotalBytes],
    ["node.external", node.externalBytes],
    ["node.array-buffers", node.arrayBuffersBytes],
    ["arena.reserved", arenaBytes],
    ["records.fields", fieldBytes],
  ];
}

function statsCommand(ctx: CommandContext): void {
  const fields = statsFields(ctx);
  ctx.reply.mapHeader(fields.length);
  for (const [name, value] of fields) {
    ctx.reply.bulk(name);
    if (typeof value === "number") ctx.reply.integer(value);
    else ctx.reply.bulk(value);
  }
}

const subDoc = (summary: string, since: string, complexity = "O(1)") =>
  ({ summary, since, group: "server", complexity }) as const;

const memorySubcommands: readonly CommandSpec[] = [
  {
    name: "memory|usage",
    arity: -3,
    flags: ["readonly"],
    keys: SUBCOMMAND_KEY,
    acl: ["@read", "@slow"],
    doc: subDoc("Estimates the memory usage of a key.", "4.0.0", "O(N) where N is the number of samples."),
    run: usageCommand,
  },
  {
    name: "memory|stats",
    arity: 2,
    flags: [],
    keys: { first: 0, last: 0, step: 0 },
    acl: ["@slow"],
    doc: subDoc("Returns details about memory usage.", "4.0.0"),
    run: statsCommand,
  },
  helpSubcommand("memory", MEMORY_HELP, { since: "4.0.0", group: "server" }),
];

export const memoryCommand: CommandSpec = {
  name: "memory",
  arity: -2,
  flags: [],
  keys: SUBCOMMAND_KEY,
  acl: ["@slow"],
  doc: {
    summary: "A container for memory diagnostics commands.",
    since: "4.0.0",
    group: "server",
    complexity: "Depends on subcommand.",
  },
  subcommands: memorySubcommands,
  run: (ctx, args) => dispatchSubcommand("memory", memorySubcommands, ctx, args),
};

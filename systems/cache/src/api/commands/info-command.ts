/**
 * INFO: Redis's `field:value` report by section (server, clients, memory, persistence,
 * stats, replication, cpu, keyspace), with the fields tools read — ioredis's ready
 * check reads `loading`, dashboards read keyspace_hits/misses, evicted_keys,
 * expired_keys, used_memory and maxmemory. `used_memory` is the accounted bytes that
 * maxmemory limits; `used_memory_rss` what the process really holds, so their ratio
 * (`mem_fragmentation_ratio`) shows the headroom CA-13 asks to plan for. In cluster mode
 * `redis_mode:cluster` and `# Cluster` `cluster_enabled:1` tell clients (redis-cli
 * --cluster, ioredis's checks) to use cluster commands; Replication reports the node's
 * role, replicas and offset.
 *
 * @example
 * // INFO memory → "# Memory\r\nused_memory:1048576\r\n…maxmemory_policy:allkeys-lru\r\n"
 */
import { ENTRY_OVERHEAD_BYTES } from "../../domain/cache-entry.ts";
import { humanBytes } from "../../domain/memory-size.ts";
import type { CommandContext, CommandSpec } from "./command-spec.ts";
import { REDIS_COMPAT_VERSION, serverMode, serverRole } from "./connection-commands.ts";

type Section = (ctx: CommandContext) => Array<[string, string | number]>;

const SECTIONS: Readonly<Record<string, Section>> = {
  server: (ctx) => {
    const stats = ctx.node.stats();
    const uptimeS = Math.floor((ctx.node.clock.nowMs() - stats.startedAtMs) / 1000);
    return [
      ["redis_version", REDIS_COMPAT_VERSION],
      ["server_name", "casebook-cache"],
      ["redis_mode", serverMode(ctx)],
      ["os", `${process.platform} ${process.arch}`],
      ["arch_bits", 64],
      ["multiplexing_api", "libuv"],
      ["runtime", `node ${process.version}`],
      ["process_id", stats.processId],
      ["tcp_port", stats.port],
      ["uptime_in_seconds", uptimeS],
      ["uptime_in_days", Math.floor(uptimeS / 86_400)],
      ["hz", 10],
    ];
  },
  clients: (ctx) => {
    const stats = ctx.node.stats();
    return [
      ["connected_clients", stats.connectedClients],
      ["maxclients", stats.maxClients],
      ["blocked_clients", ctx.node.replication?.waitingClients ?? 0],
    ];
  },
  memory: (ctx) => {
    const stats = ctx.node.stats();
    const used = ctx.keyspace.usedBytes;
    const max = ctx.keyspace.maxmemoryBytes;
    return [
      ["used_memory", used],
      ["used_memory_human", humanBytes(used)],
      ["used_memory_rss", stats.rssBytes],
      ["used_memory_rss_human", humanBytes(stats.rssBytes)],
      ["used_memory_peak", stats.usedMemoryPeakBytes],
      ["used_memory_peak_human", humanBytes(stats.usedMemoryPeakBytes)],
      ["used_memory_heap", stats.heapUsedBytes],
      // Node's own split of the process's memory (process.memoryUsage()), for the bench and MEMORY STATS.
      ["node_heap_used", stats.heapUsedBytes],
      ["node_heap_total", stats.heapTotalBytes],
      ["node_external", stats.externalBytes],
      ["node_array_buffers", stats.arrayBuffersBytes],
      ["entry_overhead_bytes", ENTRY_OVERHEAD_BYTES],
      ["maxmemory", max],
      ["maxmemory_human", humanBytes(max)],
      ["maxmemory_policy", ctx.keyspace.policy],
      ["mem_fragmentation_ratio", used === 0 ? 0 : (stats.rssBytes / used).toFixed(2)],
    ];
  },
  persistence: () => [
    ["loading", 0],
    ["rdb_changes_since_last_save", 0],
    ["aof_enabled", 0],
  ],
  stats: (ctx) => {
    const node = ctx.node.stats();
    const keys = ctx.keyspace.stats;
    return [
      ["total_connections_received", node.totalConnections],
      ["total_commands_processed", node.totalCommands],
      ["rejected_connections", node.rejectedConnections],
      ["expired_keys", keys.expiredKeys],
      ["evicted_keys", keys.evictedKeys],
      ["keyspace_hits", keys.hits],
      ["keyspace_misses", keys.misses],
    ];
  },
  replication: (ctx) => {
    const source = ctx.node.replication;
    if (source === undefined || !source.active) {
      // Redis's field names: "slave" is what its tools parse.
      return [
        ["role", serverRole(ctx) === "replica" ? "slave" : "master"],
        ["connected_slaves", 0],
      ];
    }
    return [
      ["role", "master"],
      ["connected_slaves", [...source.replicas()].length],
      ["master_replid", source.replid],
      ["master_repl_offset", source.offset],
    ];
  },
  cpu: () => {
    const usage = process.cpuUsage();
    return [
      ["used_cpu_sys", (usage.system / 1e6).toFixed(6)],
      ["used_cpu_user", (usage.user / 1e6).toFixed(6)],
    ];
  },
  cluster: (ctx) => [["cluster_enabled", serverMode(ctx) === "cluster" ? 1 : 0]],
  keyspace: (ctx) => {
    const stats = ctx.keyspace.stats;
    return stats.keys === 0 ? [] : [["db0", `keys=${stats.keys},expires=${stats.volatileKeys},avg_ttl=0`]];
  },
};

const TITLES: Readonly<Record<string, string>> = {
  server: "Server",
  clients: "Clients",
  memory: "Memory",
  persistence: "Persistence",
  stats: "Stats",
  replication: "Replication",
  cpu: "CPU",
  cluster: "Cluster",
  keyspace: "Keyspace",
};

/** The sections INFO prints for `args` (none or default/all/everything = every section), in Redis's order. */
function wantedSections(args: readonly string[]): string[] {
  const names = Object.keys(SECTIONS);
  if (args.length <= 1) return names;
  const asked = new Set(args.slice(1).map((arg) => arg.toLowerCase()));
  if (asked.has("default") || asked.has("all") || asked.has("everything")) return names;
  return names.filter((name) => asked.has(name));
}

/** The INFO text for `args`. */
export function infoText(ctx: CommandContext, args: readonly string[]): string {
  return wantedSections(args)
    .map((name) => {
      const lines = SECTIONS[name]!(ctx).map(([field, value]) => `${field}:${value}\r\n`);
      return `# ${TITLES[name]}\r\n${lines.join("")}`;
    })
    .join("\r\n");
}

export const infoCommand: CommandSpec = {
  name: "info",
  arity: -1,
  flags: ["loading", "stale"],
  keys: { first: 0, last: 0, step: 0 },
  acl: ["@slow", "@dangerous"],
  doc: {
    summary: "Returns information and statistics about the server.",
    since: "1.0.0",
    group: "server",
    complexity: "O(1)",
  },
  run: (ctx, args) => ctx.reply.verbatim(infoText(ctx, args)),
};

/**
 * The node's Prometheus metrics on the HTTP sidecar (/metrics): hits, misses,
 * evictions, expirations, accounted memory against maxmemory, keys, clients, commands.
 * Read from the keyspace and server at scrape time: nothing on the command hot path.
 *
 * @example
 * registerCacheMetrics(service.registry, server);
 * // cache_keyspace_hits_total 1042
 */
import { Counter, Gauge, type Registry } from "prom-client";
import type { CacheServer } from "./cache-server.ts";

/** A counter whose value is read from a source of truth at scrape time. */
function mirroredCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

function mirroredGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

export function registerCacheMetrics(registry: Registry, server: CacheServer): void {
  const keyspace = server.keyspace;
  mirroredCounter(
    registry,
    "cache_keyspace_hits_total",
    "Reads that found their key.",
    () => keyspace.stats.hits,
  );
  mirroredCounter(
    registry,
    "cache_keyspace_misses_total",
    "Reads that did not find their key.",
    () => keyspace.stats.misses,
  );
  mirroredCounter(
    registry,
    "cache_evicted_keys_total",
    "Keys evicted to stay within maxmemory.",
    () => keyspace.stats.evictedKeys,
  );
  mirroredCounter(
    registry,
    "cache_expired_keys_total",
    "Keys removed because their TTL passed.",
    () => keyspace.stats.expiredKeys,
  );
  mirroredCounter(
    registry,
    "cache_commands_processed_total",
    "Commands run.",
    () => server.stats().totalCommands,
  );
  mirroredGauge(
    registry,
    "cache_used_memory_bytes",
    "Accounted bytes of keys, values and entry overhead.",
    () => keyspace.usedBytes,
  );
  mirroredGauge(
    registry,
    "cache_maxmemory_bytes",
    "The maxmemory limit (0 = none).",
    () => keyspace.maxmemoryBytes,
  );
  mirroredGauge(registry, "cache_keys", "Keys in the keyspace.", () => keyspace.size);
  mirroredGauge(
    registry,
    "cache_connected_clients",
    "Open client connections.",
    () => server.connectionCount,
  );
}

/**
 * The node's Prometheus metrics on the HTTP sidecar (/metrics): hits, misses,
 * evictions, expirations, accounted memory against maxmemory, keys, clients, commands.
 * Read from the keyspace and server at scrape time: nothing on the command hot path.
 *
 * @example
 * registerCacheMetrics(service.registry, server);
 * // cache_keyspace_hits_total 1042
 */
import { scrapedCounter, scrapedGauge } from "@casebook/infra/http/metrics";
import type { Registry } from "prom-client";
import type { CacheServer } from "./api/cache-server.ts";

export function registerCacheMetrics(registry: Registry, server: CacheServer): void {
  const keyspace = server.keyspace;
  scrapedCounter(
    registry,
    "cache_keyspace_hits_total",
    "Reads that found their key.",
    () => keyspace.stats.hits,
  );
  scrapedCounter(
    registry,
    "cache_keyspace_misses_total",
    "Reads that did not find their key.",
    () => keyspace.stats.misses,
  );
  scrapedCounter(
    registry,
    "cache_evicted_keys_total",
    "Keys evicted to stay within maxmemory.",
    () => keyspace.stats.evictedKeys,
  );
  scrapedCounter(
    registry,
    "cache_expired_keys_total",
    "Keys removed because their TTL passed.",
    () => keyspace.stats.expiredKeys,
  );
  scrapedCounter(
    registry,
    "cache_commands_processed_total",
    "Commands run.",
    () => server.stats().totalCommands,
  );
  scrapedGauge(
    registry,
    "cache_used_memory_bytes",
    "Accounted bytes of keys, values and entry overhead.",
    () => keyspace.usedBytes,
  );
  scrapedGauge(
    registry,
    "cache_maxmemory_bytes",
    "The maxmemory limit (0 = none).",
    () => keyspace.maxmemoryBytes,
  );
  scrapedGauge(registry, "cache_keys", "Keys in the keyspace.", () => keyspace.size);
  scrapedGauge(registry, "cache_connected_clients", "Open client connections.", () => server.connectionCount);
}

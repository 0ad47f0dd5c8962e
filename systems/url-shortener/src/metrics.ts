/**
 * The Prometheus metrics of url-shortener, registered on the service's own registry (served at
 * /metrics beside the base's HTTP histogram and the Node process metrics). Names follow
 * Prometheus' conventions: `url_shortener_` first, the unit last (`_total`, `_bytes`).
 *
 * The read cache's hit ratio (US-13/14) is
 * `rate(url_shortener_read_cache_requests_total{result="hit"}[5m]) / rate(url_shortener_read_cache_requests_total[5m])`.
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" });
 * const found = metrics.redirectTallies.of("302"); // once
 * found.inc(); // per redirect: a plain number, added to url_shortener_redirects_total at the next scrape
 */
import { Counter, Gauge, type Registry } from "prom-client";

/** One label value's count on a hot path: a plain number, no label hashing per `inc()`. */
export interface Tally {
  inc(): void;
}

/**
 * Counts of a one-label counter kept as plain numbers, added to the counter when it is read
 * (each scrape, or `get()`): the redirect bumps two counters per request, and prom-client's
 * `labels()` child validates and hashes its labels on every `inc()` (issue 18's profile).
 */
export class LabelTallies {
  readonly #pending = new Map<string, { count: number }>();

  /** The tally of one label value (made once; keep it). */
  of(value: string): Tally {
    let slot = this.#pending.get(value);
    if (slot === undefined) {
      const made = { count: 0 };
      slot = made;
      this.#pending.set(value, made);
    }
    const counted = slot;
    return {
      inc() {
        counted.count += 1;
      },
    };
  }

  /** Adds what was counted since the last read to `counter` (under `label`), and starts again from 0. */
  drainInto<L extends string>(counter: Counter<L>, label: L): void {
    for (const [value, slot] of this.#pending) {
      if (slot.count === 0) continue;
      counter.inc({ [label]: value } as Partial<Record<L, string>>, slot.count);
      slot.count = 0;
    }
  }
}

/** A one-label counter whose hot-path counts are tallies, drained into it at each read. */
function talliedCounter<L extends string>(
  registry: Registry,
  config: { name: string; help: string; label: L },
): { counter: Counter<L>; tallies: LabelTallies } {
  const tallies = new LabelTallies();
  const counter: Counter<L> = new Counter({
    name: config.name,
    help: config.help,
    labelNames: [config.label],
    registers: [registry],
    collect() {
      tallies.drainInto(counter, config.label);
    },
  });
  return { counter, tallies };
}

export interface SystemMetrics {
  /** Always 1, labelled with the running version: joins a dashboard's series to a deploy. */
  readonly buildInfo: Gauge<"version">;
  /** Redirect answers by outcome: 301/302/307/308, 404, 410 (read it through get(): counts wait in `redirectTallies`). */
  readonly redirects: Counter<"outcome">;
  /** The redirect path's counts of `redirects`, by outcome. */
  readonly redirectTallies: LabelTallies;
  /** LRU lookups by result: hit or miss (counts wait in `readCacheTallies` until read). */
  readonly readCache: Counter<"result">;
  /** The read path's counts of `readCache`, by result. */
  readonly readCacheTallies: LabelTallies;
  /** Links created, by code scheme: generated (counter) or alias. */
  readonly linksCreated: Counter<"scheme">;
  /** Creations refused, by reason: rate_limited, blocked. */
  readonly createsRefused: Counter<"reason">;
  /** Lines of the edge's click log appended to the click log. */
  readonly edgeClicksIngested: Counter;
  /** Lines of the edge's click log that were not visits (skipped). */
  readonly edgeLinesSkipped: Counter;
  /** Edge purges by outcome: purged, absent (not cached), failed. */
  readonly edgePurges: Counter<"outcome">;
  /** Expired links deleted by the reaper. */
  readonly linksReaped: Counter;
  /** Visits written to the click log by the flusher. */
  readonly clicksFlushed: Counter;
  /** Visits dropped because the buffer was full (the redirect was never slowed). */
  readonly clicksDropped: Counter;
}

export function createMetrics(registry: Registry, build: { version: string }): SystemMetrics {
  const buildInfo = new Gauge({
    name: "url_shortener_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers: [registry],
  });
  buildInfo.set({ version: build.version }, 1);
  const redirects = talliedCounter(registry, {
    name: "url_shortener_redirects_total",
    help: "Answers of GET /{code} by outcome (the 3xx status, 404 unknown, 410 expired or disabled)",
    label: "outcome",
  });
  const readCache = talliedCounter(registry, {
    name: "url_shortener_read_cache_requests_total",
    help: "In-process LRU lookups of the redirect path, by result (hit, miss)",
    label: "result",
  });
  return {
    buildInfo,
    redirects: redirects.counter,
    redirectTallies: redirects.tallies,
    readCache: readCache.counter,
    readCacheTallies: readCache.tallies,
    linksCreated: new Counter({
      name: "url_shortener_links_created_total",
      help: "Links created, by code scheme (generated by the counter, or a custom alias)",
      labelNames: ["scheme"],
      registers: [registry],
    }),
    createsRefused: new Counter({
      name: "url_shortener_creates_refused_total",
      help: "Link creations refused before anything was stored, by reason (rate_limited, blocked)",
      labelNames: ["reason"],
      registers: [registry],
    }),
    clicksFlushed: new Counter({
      name: "url_shortener_clicks_flushed_total",
      help: "Visits (clicks and orphan visits) appended to the click log, in batches, off the redirect path",
      registers: [registry],
    }),
    clicksDropped: new Counter({
      name: "url_shortener_clicks_dropped_total",
      help: "Visits dropped because the click buffer was full or a refused batch no longer fit: counted, never waited for",
      registers: [registry],
    }),
    edgeClicksIngested: new Counter({
      name: "url_shortener_edge_clicks_ingested_total",
      help: "Visits read from the edge's JSON access log and appended to the click log (each line once)",
      registers: [registry],
    }),
    edgeLinesSkipped: new Counter({
      name: "url_shortener_edge_log_lines_skipped_total",
      help: "Lines of the edge's access log that were not visits (malformed or overlong): skipped",
      registers: [registry],
    }),
    edgePurges: new Counter({
      name: "url_shortener_edge_purges_total",
      help: "Purges of a changed link from the edge, by outcome (purged, absent: not cached, failed: max-age bounds it)",
      labelNames: ["outcome"],
      registers: [registry],
    }),
    linksReaped: new Counter({
      name: "url_shortener_links_reaped_total",
      help: "Expired links deleted by the reaper",
      registers: [registry],
    }),
  };
}

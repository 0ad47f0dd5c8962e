/**
 * The Prometheus metrics of feed, registered on the service's own registry (served at
 * /metrics beside the base's HTTP histogram and the Node process metrics): fan-out lag (a
 * post's age when its fan-out completed), queue depth, rebuilds in flight and their outcomes,
 * and the thresholds in force.
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" });
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export interface MetricsReaders {
  /** Events not yet fanned out, and the oldest one's age (null on an API-only replica). */
  readonly queue?: () => Promise<{ unpublished: bigint; oldestAgeMs: number }>;
  readonly rebuildsInFlight?: () => number;
  readonly thresholds: () => { fullPushMax: number; activePushMax: number };
  /** API keys checked against the table and the SELECTs that took (batched; none on a fan-out worker). */
  readonly keyChecks?: () => { readonly queries: number; readonly keys: number };
}

export interface SystemMetrics {
  /** Always 1, labelled with the running version: joins a dashboard's series to a deploy. */
  readonly buildInfo: Gauge<"version">;
  /** A post's age when its fan-out completed, by tier. */
  readonly fanoutLag: Histogram<"tier">;
  /** Lists written by the fan-out, by tier. */
  readonly fanoutWrites: Counter<"tier">;
  /** Rebuild attempts by outcome: rebuilt, locked (another request rebuilds), capped, lost (lock expired), degraded (Redis down: pulled, nothing written). */
  readonly rebuilds: Counter<"outcome">;
  /** Home-feed reads by path: warm (one round trip to the caches, no database) or cold (the steps, filling the caches). */
  readonly homeReads: Counter<"path">;
}

export function createMetrics(
  registry: Registry,
  build: { version: string },
  read?: MetricsReaders,
): SystemMetrics {
  const buildInfo = new Gauge({
    name: "feed_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers: [registry],
  });
  buildInfo.set({ version: build.version }, 1);
  const fanoutLag = new Histogram({
    name: "feed_fanout_lag_seconds",
    help: "A post's age when its fan-out completed (time until it is in its followers' lists)",
    labelNames: ["tier"],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
    registers: [registry],
  });
  const fanoutWrites = new Counter({
    name: "feed_fanout_list_writes_total",
    help: "Timeline writes made by the fan-out",
    labelNames: ["tier"],
    registers: [registry],
  });
  const rebuilds = new Counter({
    name: "feed_rebuilds_total",
    help: "Timeline rebuild attempts by outcome (degraded: Redis was down, the read pulled and wrote nothing)",
    labelNames: ["outcome"],
    registers: [registry],
  });
  const homeReads = new Counter({
    name: "feed_home_reads_total",
    help: "Home-feed reads by path: warm (one Redis round trip, no database) or cold (the steps, filling the caches)",
    labelNames: ["path"],
    registers: [registry],
  });
  if (read) registerReadGauges(registry, read);
  return { buildInfo, fanoutLag, fanoutWrites, rebuilds, homeReads };
}

function registerReadGauges(registry: Registry, read: MetricsReaders): void {
  if (read.queue) {
    const queue = read.queue;
    new Gauge({
      name: "feed_fanout_queue_depth",
      help: "Fan-out events not yet done",
      registers: [registry],
      async collect() {
        this.set(Number((await queue()).unpublished));
      },
    });
    new Gauge({
      name: "feed_fanout_queue_oldest_age_seconds",
      help: "Age of the oldest fan-out event not yet done",
      registers: [registry],
      async collect() {
        this.set((await queue()).oldestAgeMs / 1000);
      },
    });
  }
  if (read.keyChecks) {
    const stats = read.keyChecks;
    new Counter({
      name: "feed_key_checks_total",
      help: "API keys checked against the table (the key cache's misses and background re-checks)",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(stats().keys);
      },
    });
    new Counter({
      name: "feed_key_check_queries_total",
      help: "SELECTs those checks took: checks asked while one is in flight go together in the next",
      registers: [registry],
      collect() {
        this.reset();
        this.inc(stats().queries);
      },
    });
  }
  if (read.rebuildsInFlight) {
    const inFlight = read.rebuildsInFlight;
    new Gauge({
      name: "feed_rebuilds_in_flight",
      help: "Timeline rebuilds running in this process",
      registers: [registry],
      collect() {
        this.set(inFlight());
      },
    });
  }
  new Gauge({
    name: "feed_tier_threshold_followers",
    help: "Follower count up to which a tier applies (push: full push; push_active: active followers only)",
    labelNames: ["tier"],
    registers: [registry],
    collect() {
      const t = read.thresholds();
      this.set({ tier: "push" }, t.fullPushMax);
      this.set({ tier: "push_active" }, t.activePushMax);
    },
  });
}

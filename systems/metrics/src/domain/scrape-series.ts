/**
 * One scrape of one target, turned into the batch the ingest takes — the way Prometheus's scrape
 * loop appends it:
 *
 * - every exposed sample gets the target's `job` and `instance` labels; a sample that brings its
 *   own keeps it as `exported_job` / `exported_instance` (Prometheus's `honor_labels: false`);
 * - its time is the scrape's, unless the line carried a timestamp (honoured, as Prometheus does);
 * - three series describe the scrape itself, written whether it worked or not: `up` (1 or 0),
 *   `scrape_duration_seconds` and `scrape_samples_scraped`;
 * - **staleness**: a series the previous scrape had and this one has not — the target died, or
 *   it stopped exposing that series — gets a staleness marker (StaleNaN) at this scrape's time,
 *   so `rate`, instant queries and alerts see it end now instead of carrying its last value for
 *   the 5-minute lookback (MT-05's "staleness markers kept"). A series with its own timestamps
 *   is never marked, as in Prometheus;
 * - a series exposed twice in one scrape keeps its first sample; the others are counted.
 *
 * Pure: the caller keeps `current` and passes it back as `previous` next time.
 *
 * @example
 * const target = { job: "cache", instance: "127.0.0.1:8114", url: "http://127.0.0.1:8114/metrics" };
 * let seen = new Map();
 * const first = scrapeBatch(target, 1_700_000_000_000, { ok: true, samples, durationMs: 12 }, seen);
 * seen = first.current; // then, the target gone:
 * scrapeBatch(target, 1_700_000_015_000, { ok: false, error: "connection refused", durationMs: 1 }, seen);
 * // → up 0, and a StaleNaN for every series `first` wrote
 */
import type { Sample } from "@casebook/kit/prom-text";
import { type Labels, labelsFromPairs, METRIC_NAME, seriesKey } from "./labels.ts";
import type { ScrapeTarget } from "./scrape-target.ts";
import { STALE_NAN } from "./staleness.ts";

export type ScrapeOutcome =
  | { readonly ok: true; readonly samples: readonly Sample[]; readonly durationMs: number }
  | { readonly ok: false; readonly error: string; readonly durationMs: number };

export interface ScrapeSeries {
  readonly labels: Labels;
  readonly samples: ReadonlyArray<{ t: number; v: number }>;
}

export interface ScrapeBatch {
  readonly series: ScrapeSeries[];
  /** Series of this scrape that staleness will follow (key → labels): the next call's `previous`. */
  readonly current: Map<string, Labels>;
  /** Staleness markers written (series gone since the previous scrape). */
  readonly staleMarkers: number;
  /** Samples dropped as a second copy of a series in this scrape. */
  readonly duplicates: number;
}

/** The series Prometheus writes about every scrape, whatever the target exposed. */
export const SCRAPE_SERIES = ["up", "scrape_duration_seconds", "scrape_samples_scraped"] as const;

const TARGET_LABELS = ["job", "instance"] as const;

export function scrapeBatch(
  target: ScrapeTarget,
  atMs: number,
  outcome: ScrapeOutcome,
  previous: ReadonlyMap<string, Labels>,
): ScrapeBatch {
  const series: ScrapeSeries[] = [];
  const current = new Map<string, Labels>();
  const written = new Set<string>();
  let duplicates = 0;
  for (const sample of outcome.ok ? outcome.samples : []) {
    const labels = targetLabels(target, sample);
    const key = seriesKey(labels);
    if (written.has(key)) {
      duplicates++;
      continue;
    }
    written.add(key);
    if (sample.timestampMs === undefined) current.set(key, labels);
    series.push({ labels, samples: [{ t: sample.timestampMs ?? atMs, v: sample.value }] });
  }
  let staleMarkers = 0;
  for (const [key, labels] of previous) {
    if (current.has(key)) continue;
    series.push({ labels, samples: [{ t: atMs, v: STALE_NAN }] });
    staleMarkers++;
  }
  const scraped = outcome.ok ? outcome.samples.length : 0;
  const report: Record<(typeof SCRAPE_SERIES)[number], number> = {
    up: outcome.ok ? 1 : 0,
    scrape_duration_seconds: outcome.durationMs / 1000,
    scrape_samples_scraped: scraped,
  };
  for (const name of SCRAPE_SERIES) {
    const labels = labelsFromPairs([
      [METRIC_NAME, name],
      ...TARGET_LABELS.map((l) => [l, target[l]] as const),
    ]);
    series.push({ labels, samples: [{ t: atMs, v: report[name] }] });
  }
  return { series, current, staleMarkers, duplicates };
}

/** The sample's labels with the target's: `job` and `instance` win, the sample's own renamed `exported_…`. */
function targetLabels(target: ScrapeTarget, sample: Sample): Labels {
  const pairs: Array<readonly [string, string]> = [[METRIC_NAME, sample.name]];
  for (const [name, value] of Object.entries(sample.labels)) {
    const clashes = name === "job" || name === "instance" || name === METRIC_NAME;
    pairs.push([clashes ? `exported_${name}` : name, value]);
  }
  for (const name of TARGET_LABELS) pairs.push([name, target[name]]);
  return labelsFromPairs(pairs);
}

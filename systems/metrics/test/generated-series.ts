/**
 * A small seeded generator of the series a differential test writes to both sides — ours by
 * remote-write, Prometheus by `promtool tsdb create-blocks-from openmetrics` — so both hold
 * the very same samples, bit for bit, on every run and every machine:
 * - `http_requests_total{job,instance,method,code}`: counters with random integer increments
 *   and a reset (a process restart) in two of them;
 * - `memory_usage_bytes`, `temperature_celsius`: gauges that wander (2-decimal values);
 * - `request_duration_seconds_bucket{le}` with `_sum` and `_count`: a cumulative histogram;
 * - `up`, `build_info{version}` (for `group_left`);
 * - `batch_last_run_timestamp_seconds` / `batch_processed_total{job="batch"}`: series that
 *   STOP at 60 % of the span, so the 5 min lookback decides what a query still sees;
 * - `queue_depth`: a gauge with a 12 min hole in the middle (gone, then back).
 * Every sample is on a 15 s grid; values are written with JavaScript's shortest round-trip
 * form, which Go parses back to the same float64.
 *
 * @example
 * const data = generateSeries({ seed: "diff", startMs, samples: 240 });
 * data.series;          // [{ labels, samples: [{ t, v }] }] for encodeWriteRequest
 * data.openMetrics();   // 'http_requests_total{…} 17 1700000000\n…# EOF\n' for promtool
 */
import { int, type RandomSource, seededRandom } from "@casebook/kit/random";
import { type Labels, labelsFromRecord } from "../src/domain/labels.ts";

export interface GeneratedSeries {
  readonly labels: Labels;
  readonly samples: Array<{ t: number; v: number }>;
}

export interface GeneratedData {
  readonly series: readonly GeneratedSeries[];
  readonly startMs: number;
  /** The newest sample's time. */
  readonly endMs: number;
  /** When the `batch` series stop (their last sample). */
  readonly stopMs: number;
  readonly intervalMs: number;
  /** Every sample, time by time, as OpenMetrics text ending `# EOF`. */
  openMetrics(): string;
}

export const GENERATED_INTERVAL_MS = 15_000;
const JOBS = ["api", "web"] as const;
const INSTANCES = ["a:9100", "b:9100"] as const;
const BUCKETS = [0.1, 0.25, 0.5, 1, Number.POSITIVE_INFINITY] as const;

const round2 = (x: number) => Math.round(x * 100) / 100;

type Step = (i: number) => number | undefined;

/** One series: labels plus a function of the step index (undefined: no sample then). */
interface Source {
  readonly labels: Labels;
  readonly at: Step;
}

function counter(rng: RandomSource, resetAt: number | undefined): Step {
  let value = int(rng, 50);
  return (i) => {
    if (i === resetAt) value = int(rng, 3);
    else value += int(rng, 21);
    return value;
  };
}

function wander(rng: RandomSource, base: number, spread: number): Step {
  let value = base;
  return () => {
    value = round2(value + (rng.next() - 0.5) * spread);
    return value;
  };
}

function histogram(rng: RandomSource, labels: Record<string, string>): Source[] {
  const counts = BUCKETS.map(() => 0);
  let sum = 0;
  let observedAt = -1;
  const observe = (i: number) => {
    if (observedAt === i) return;
    observedAt = i;
    for (let n = int(rng, 11); n > 0; n--) {
      const seconds = round2(rng.next() * rng.next() * 1.5);
      sum = round2(sum + seconds);
      BUCKETS.forEach((le, b) => {
        if (seconds <= le) counts[b]!++;
      });
    }
  };
  /** The step's observations are drawn once, by whichever of the histogram's series asks first. */
  const at =
    (read: () => number): Step =>
    (i) => {
      observe(i);
      return read();
    };
  const name = "request_duration_seconds";
  return [
    ...BUCKETS.map((le, b) => ({
      labels: labelsFromRecord({
        ...labels,
        __name__: `${name}_bucket`,
        le: le === Infinity ? "+Inf" : String(le),
      }),
      at: at(() => counts[b]!),
    })),
    { labels: labelsFromRecord({ ...labels, __name__: `${name}_sum` }), at: at(() => sum) },
    {
      labels: labelsFromRecord({ ...labels, __name__: `${name}_count` }),
      at: at(() => counts[BUCKETS.length - 1]!),
    },
  ];
}

function sources(rng: RandomSource, samples: number): Source[] {
  const out: Source[] = [];
  const stopAt = Math.floor(samples * 0.6);
  const holeFrom = Math.floor(samples * 0.4);
  const holeTo = holeFrom + 48; // 12 min at 15 s: longer than the 5 min lookback
  JOBS.forEach((job, j) => {
    INSTANCES.forEach((instance, k) => {
      const target = { job, instance };
      for (const method of ["GET", "POST"]) {
        for (const code of ["200", "500"]) {
          const resets = method === "GET" && code === "200" && j === k;
          out.push({
            labels: labelsFromRecord({ ...target, __name__: "http_requests_total", method, code }),
            at: counter(rng, resets ? Math.floor(samples / 2) + 7 * j : undefined),
          });
        }
      }
      out.push({
        labels: labelsFromRecord({ ...target, __name__: "memory_usage_bytes" }),
        at: wander(rng, 1_000_000 * (1 + j + k), 20_000),
      });
      out.push({
        labels: labelsFromRecord({ ...target, __name__: "temperature_celsius" }),
        at: wander(rng, 35 + 5 * k, 2),
      });
      out.push(...histogram(rng, target));
      const down = int(rng, samples);
      out.push({
        labels: labelsFromRecord({ ...target, __name__: "up" }),
        at: (i) => (i >= down && i < down + 6 && j === 1 ? 0 : 1),
      });
      out.push({
        labels: labelsFromRecord({ ...target, __name__: "build_info", version: `1.${j}.${k}` }),
        at: () => 1,
      });
    });
  });
  INSTANCES.forEach((instance, k) => {
    const target = { job: "batch", instance };
    const processed = counter(rng, undefined);
    out.push({
      labels: labelsFromRecord({ ...target, __name__: "batch_processed_total" }),
      at: (i) => (i <= stopAt ? processed(i) : undefined),
    });
    out.push({
      labels: labelsFromRecord({ ...target, __name__: "batch_last_run_timestamp_seconds" }),
      at: (i) => (i <= stopAt ? 1_700_000_000 + 60 * Math.floor(i / 4) + k : undefined),
    });
    const depth = wander(rng, 10 + k, 4);
    out.push({
      labels: labelsFromRecord({ ...target, __name__: "queue_depth" }),
      at: (i) => (i >= holeFrom && i < holeTo ? undefined : Math.abs(depth(i) ?? 0)),
    });
  });
  return out;
}

function openMetricsLine(labels: Labels, v: number, t: number): string {
  let name = "";
  const pairs: string[] = [];
  for (const [label, value] of labels) {
    if (label === "__name__") name = value;
    else pairs.push(`${label}="${value}"`);
  }
  return `${name}{${pairs.join(",")}} ${String(v)} ${t / 1000}`;
}

/** `samples` points per series every 15 s from `startMs` (a multiple of 15 s), from `seed`. */
export function generateSeries(options: { seed: string; startMs: number; samples: number }): GeneratedData {
  const rng = seededRandom(options.seed);
  const all = sources(rng, options.samples);
  const series = all.map((s) => ({ labels: s.labels, samples: [] as Array<{ t: number; v: number }> }));
  // Time-major, as a scrape would: each step's value may draw on the shared random source.
  for (let i = 0; i < options.samples; i++) {
    const t = options.startMs + i * GENERATED_INTERVAL_MS;
    all.forEach((source, s) => {
      const v = source.at(i);
      if (v !== undefined) series[s]!.samples.push({ t, v });
    });
  }
  const intervalMs = GENERATED_INTERVAL_MS;
  return {
    series,
    startMs: options.startMs,
    endMs: options.startMs + (options.samples - 1) * intervalMs,
    stopMs: options.startMs + Math.floor(options.samples * 0.6) * intervalMs,
    intervalMs,
    openMetrics: () => {
      const lines: string[] = [];
      const next = series.map(() => 0);
      for (let i = 0; i < options.samples; i++) {
        const t = options.startMs + i * intervalMs;
        series.forEach((s, k) => {
          const sample = s.samples[next[k]!];
          if (sample?.t !== t) return;
          lines.push(openMetricsLine(s.labels, sample.v, t));
          next[k]!++;
        });
      }
      return `${lines.join("\n")}\n# EOF\n`;
    },
  };
}

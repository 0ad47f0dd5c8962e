/**
 * The bench's dashboard: eight range queries a node-exporter dashboard asks (Grafana's "Node
 * Exporter Full" panels, reduced to their PromQL), each with its range and step, ending at the
 * workload's last scrape — and the runner that asks one side a panel and times it (from the
 * request's start to the body's last byte, over a kept-alive connection).
 *
 * Steps stay under 1 min for every `rate`/`increase` panel: at 1 min and above our query
 * router answers from the 1 min rollup tier, which has no counter resets to compute `rate`
 * with (the README's "not built yet"); the two gauge panels at 60 s go through that tier.
 *
 * @example
 * const panels = dashboard(workload.endMs, spanMs);
 * const timing = await askPanel(side, panels[0]);  // { ms, series, points } or { error }
 */
import type { BenchSide } from "./bench-sides.ts";

export interface Panel {
  /** Short name for the table. */
  readonly name: string;
  readonly query: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly stepS: number;
}

export type PanelAnswer =
  | { ok: true; ms: number; series: number; points: number; tiers: string | undefined }
  | { ok: false; ms: number; error: string };

/** A panel slower than this counts as failed (the sides answer in milliseconds to seconds). */
const QUERY_TIMEOUT_MS = 60_000;
const HOUR_MS = 3_600_000;

/** The eight panels over the data ending at `endMs` (spanning `spanMs`). */
export function dashboard(endMs: number, spanMs: number): Panel[] {
  const lastHour = (stepS: number) => ({
    startMs: Math.max(endMs - HOUR_MS, endMs - spanMs),
    endMs,
    stepS,
  });
  // Whole-span panels start 15 min in, so every window has data behind it on every side.
  const whole = (stepS: number) => ({ startMs: endMs - spanMs + 15 * 60_000, endMs, stepS });
  return [
    {
      name: "cpu busy by host",
      query: 'sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))',
      ...lastHour(15),
    },
    {
      name: "cpu by mode, fleet",
      query: "sum by (mode) (rate(node_cpu_seconds_total[5m]))",
      ...whole(30),
    },
    {
      name: "network in by host",
      query: 'sum by (instance) (rate(node_network_receive_bytes_total{device="eth0"}[5m]))',
      ...whole(30),
    },
    {
      name: "http p99",
      query: "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))",
      ...lastHour(15),
    },
    {
      name: "top 5 disk writers",
      query: "topk(5, max by (instance) (increase(node_disk_written_bytes_total[15m])))",
      ...whole(30),
    },
    {
      name: "root fs used",
      query: '1 - node_filesystem_avail_bytes{mountpoint="/"} / node_filesystem_size_bytes{mountpoint="/"}',
      ...lastHour(15),
    },
    {
      name: "memory available, 10 min mean",
      query: "avg_over_time(node_memory_MemAvailable_bytes[10m])",
      ...whole(60),
    },
    { name: "load5, max by host", query: "max by (instance) (node_load5)", ...whole(60) },
  ];
}

/** A panel's URL on a side (seconds, as Grafana sends them). */
export function panelUrl(side: BenchSide, panel: Panel): string {
  const params = new URLSearchParams({
    query: panel.query,
    start: String(panel.startMs / 1000),
    end: String(panel.endMs / 1000),
    step: String(panel.stepS),
    ...side.queryParams,
  });
  return `${side.queryUrl}/api/v1/query_range?${params}`;
}

/** Asks a side one panel and times it to the body's end. */
export async function askPanel(side: BenchSide, panel: Panel): Promise<PanelAnswer> {
  const started = performance.now();
  try {
    const res = await fetch(panelUrl(side, panel), {
      headers: side.queryHeaders,
      signal: AbortSignal.timeout(QUERY_TIMEOUT_MS),
    });
    const text = await res.text();
    const ms = performance.now() - started;
    if (res.status !== 200) return { ok: false, ms, error: `${res.status} ${text.slice(0, 300)}` };
    const body = JSON.parse(text) as { data: { result: Array<{ values: unknown[] }> } };
    const points = body.data.result.reduce((n, r) => n + r.values.length, 0);
    return {
      ok: true,
      ms,
      series: body.data.result.length,
      points,
      tiers: res.headers.get("x-metrics-tiers") ?? undefined,
    };
  } catch (error) {
    return { ok: false, ms: performance.now() - started, error: String(error) };
  }
}

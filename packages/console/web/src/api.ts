/** The console's JSON API, as the front end reads it (console-routes.ts is the other side). */

export type HealthState = "up" | "degraded" | "down" | "unknown";

export interface SystemSummary {
  name: string;
  title: string;
  status: string;
  started: boolean;
  health: { state: HealthState; detail?: string; checkedAtMs?: number };
  url: string;
  ports: { name: string; port: number }[];
  summary: string | null;
  seed: string | null;
  links: { page: string; readme: string | null; design: string | null; docs: string; metrics: string };
  claimCounts: { total: number; pass: number; fail: number; skipped: number; notRun: number };
}

export interface ClaimResult {
  id: string;
  text: string;
  status: "pass" | "fail" | "skipped" | "not run";
  tests: { name: string; file: string; status: string }[];
}

export interface ScenarioInfo {
  id: string;
  title: string;
  line: string;
}

/** A system's run, as its GET /v1/scenarios/{id}/runs/{runId} answers (infra's scenario-runs). */
export interface ScenarioRun {
  runId: string;
  scenario: string;
  xLabel: string;
  yLabel: string;
  state: "running" | "done" | "failed" | "timed out" | "stopped";
  progress: number;
  points: { series: string; x: number; y: number }[];
  droppedPoints: number;
  result: string | null;
  error: string | null;
}

export interface SystemDetail extends SystemSummary {
  plots: { title: string; unit: string }[];
  scenarios: ScenarioInfo[];
  claims: ClaimResult[];
}

export interface PlotData {
  title: string;
  unit: string;
  times: number[];
  lines: { label: string; values: (number | null)[] }[];
}

/** Bound on one API call: a stuck console must not freeze the page's polling. */
const requestTimeoutMs = 5_000;

export async function getJson<T>(path: string): Promise<T> {
  const response = await fetch(path, { signal: AbortSignal.timeout(requestTimeoutMs) });
  if (!response.ok) throw new Error(`${path} answered ${response.status}`);
  return (await response.json()) as T;
}

/**
 * `GET /api/v1/targets`: the scraper's targets in Prometheus's own shape — each target's labels,
 * scrape URL, health (up / down / unknown before its first scrape), last error, when it was last
 * scraped and how long that took, interval and timeout — so a tool built for Prometheus's
 * targets page works, and the console learns from it that metrics scrapes a system (and at
 * what interval, for its `rate` ranges). Only the scrape tenant sees them: the targets are the
 * deployment's own services; any other tenant gets empty lists. `state` filters as in
 * Prometheus (active, dropped, any); nothing is ever dropped (no relabelling here).
 *
 * @example
 * // GET /api/v1/targets → {"status":"success","data":{"activeTargets":[{"labels":{"instance":"127.0.0.1:8114","job":"cache"},
 * //   "scrapeUrl":"http://127.0.0.1:8114/metrics","health":"up","lastError":"","scrapeInterval":"5s",…}],"droppedTargets":[]}}
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Tenant } from "../store/tenant-repository.ts";
import type { TargetState } from "../workers/scraper.ts";
import { invalidParam, type Params, param } from "./prometheus-params.ts";

export interface TargetsRouteOptions {
  readonly tenantOf: (request: FastifyRequest) => Tenant;
  readonly scrapeTenant: string;
  readonly states: () => readonly TargetState[];
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

/** Go's zero time, which Prometheus shows for a target never scraped. */
const NEVER = "0001-01-01T00:00:00Z";
const STATES = ["active", "dropped", "any"];

export function registerTargetsRoute(scope: FastifyInstance, options: TargetsRouteOptions): void {
  scope.get(
    "/api/v1/targets",
    { schema: { summary: "The scraper's targets and their health (Prometheus's shape)", tags: ["query"] } },
    async (request) => {
      const state = param(request.query as Params, "state") ?? "any";
      if (!STATES.includes(state))
        invalidParam("state", `invalid parameter "state": must be one of ${STATES.join(", ")}`);
      const mine = options.tenantOf(request).id === options.scrapeTenant;
      const active = mine && state !== "dropped" ? options.states().map((s) => targetView(s, options)) : [];
      return { status: "success", data: { activeTargets: active, droppedTargets: [] } };
    },
  );
}

function targetView(state: TargetState, options: TargetsRouteOptions) {
  const { target } = state;
  const url = new URL(target.url);
  return {
    discoveredLabels: {
      __address__: target.instance,
      __metrics_path__: url.pathname,
      __scheme__: url.protocol.slice(0, -1),
      job: target.job,
    },
    labels: { instance: target.instance, job: target.job },
    scrapePool: target.job,
    scrapeUrl: target.url,
    globalUrl: target.url,
    lastError: state.lastError,
    lastScrape: state.lastScrapeMs === undefined ? NEVER : new Date(state.lastScrapeMs).toISOString(),
    lastScrapeDuration: (state.lastDurationMs ?? 0) / 1000,
    health: state.health,
    scrapeInterval: promDuration(options.intervalMs),
    scrapeTimeout: promDuration(options.timeoutMs),
  };
}

/** A duration as Prometheus prints one: `15s`, `1m30s`, `250ms`, `0s`. */
export function promDuration(ms: number): string {
  if (ms <= 0) return "0s";
  const units: Array<[string, number]> = [
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1_000],
    ["ms", 1],
  ];
  let rest = Math.round(ms);
  let text = "";
  for (const [unit, size] of units) {
    const count = Math.floor(rest / size);
    if (count > 0) text += `${count}${unit}`;
    rest -= count * size;
  }
  return text;
}

/**
 * The console's cardinality-explosion scenario (MT-13/16 shown live; issue 22: "a user-id tag
 * appears: the limit trips, the owner's alert fires, ingest stays up"). A tenant made for the
 * run (its own ceiling of `ceiling` series per metric; no other tenant's data is read or
 * written) sends over this service's own HTTP ingest (`POST /api/v1/push`, with its own API
 * key — the path an application without the agent takes): first a steady set of series, one
 * sample each a second; then a release starts tagging every sample with a fresh `user_id`, so
 * each sample is a new series. The hot writer admits new series up to the ceiling and refuses
 * the rest (the batch is still answered 204: the stream took it), the refusal travels the
 * stream as `metrics_cardinality_refused_series`, and the alert evaluator — reading only the
 * stream — fires `CardinalityLimitReached` for the tenant. The steady series keep flowing.
 *
 * Each second the plot gets: the metric's series in the tenant's head (`/api/v1/status/tsdb`,
 * the operator's view), the new series refused so far (the tenant's own refusal metric, through
 * the query API), the steady series' samples stored so far (climbing on through the explosion:
 * ingest stays up), and the owner's alert, drawn at the ceiling once it fires. The sentence
 * counts them, gives the ingest's answer times, and checks that every steady sample was stored. A process without the stream's consumers (direct path, or ingest-only) cannot
 * show it and says so.
 *
 * @example
 * new ScenarioRuns([cardinalityExplosionScenario({ tenants, baseUrl: () => ownUrl(app), alerts: () => evaluator.alerts(), alertIntervalMs: 15_000 })]);
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import type { TenantRepository } from "../store/tenant-repository.ts";
import { REFUSED_SERIES_METRIC } from "../workers/cardinality-alert.ts";

export interface CardinalityExplosionOptions {
  /** Seconds of steady series before the user_id tag appears. Default 4. */
  steadyS?: number;
  /** Seconds of the burst. Default 8. */
  burstS?: number;
  /** Fresh user ids (new series) a second during the burst. Default 50. */
  usersPerS?: number;
  /** The run tenant's ceiling of series per metric. Default 100. */
  ceiling?: number;
}

export interface CardinalityExplosionDeps {
  readonly tenants: TenantRepository;
  /** This service's own address, known once it listens. */
  baseUrl(): string;
  /** The alert evaluator's alerts; undefined in a process that runs no stream consumers. */
  readonly alerts: (() => ReadonlyArray<{ tenant: string; alertname: string; state: string }>) | undefined;
  /** The evaluator's interval: the alert fires at its first evaluation after the refusal. */
  readonly alertIntervalMs: number;
  readonly options?: CardinalityExplosionOptions;
}

export const CARDINALITY_SCENARIO_METRIC = "checkout_requests_total";
const ALERT = "CardinalityLimitReached";
const ROUTES = ["/cart", "/checkout", "/pay", "/confirm", "/receipt"] as const;
const STATUSES = ["200", "400", "402", "500"] as const;
const TICK_MS = 1_000;
/** Bound on one ingest or query call of the run. */
const CALL_TIMEOUT_MS = 10_000;
/** After the last write, how long the run waits for the hot writer to account for all of it. */
const SETTLE_MS = 10_000;
/** The run ends 5 s before the scenario registry's 60 s bound, alert or not. */
const RUN_BUDGET_MS = 55_000;

type PushSeries = { labels: Record<string, string>; samples: Array<{ t: number; v: number }> };

/** The steady set: one counter per route × status, each one more each second. */
function steadySeries(tick: number, nowMs: number): PushSeries[] {
  return ROUTES.flatMap((route) =>
    STATUSES.map((status) => ({
      labels: { __name__: CARDINALITY_SCENARIO_METRIC, route, status },
      samples: [{ t: nowMs, v: tick + 1 }],
    })),
  );
}

/** The release's mistake: every request counted under its user, a new series per sample. */
function userSeries(firstUser: number, count: number, nowMs: number): PushSeries[] {
  return Array.from({ length: count }, (_, i) => ({
    labels: {
      __name__: CARDINALITY_SCENARIO_METRIC,
      route: ROUTES[i % ROUTES.length]!,
      status: "200",
      user_id: `u${firstUser + i}`,
    },
    samples: [{ t: nowMs, v: 1 }],
  }));
}

/** The run's view of its tenant over the public API, with the tenant's own key. */
function tenantApi(baseUrl: string, apiKey: string, signal: AbortSignal) {
  const headers = { authorization: `Bearer ${apiKey}` };
  const call = (path: string, init: RequestInit = {}) =>
    fetch(`${baseUrl}${path}`, {
      ...init,
      headers: { ...headers, ...init.headers },
      signal: AbortSignal.any([signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]),
    });
  return {
    /** One push; its status and how long the answer took. */
    push: async (series: PushSeries[]) => {
      const startedMs = performance.now();
      const res = await call("/api/v1/push", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ timeseries: series }),
      });
      await res.body?.cancel();
      return { status: res.status, ms: performance.now() - startedMs };
    },
    /** The metric's series in the tenant's head (the top of /status/tsdb). */
    storedSeries: async () => {
      const res = await call("/api/v1/status/tsdb");
      const body = (await res.json()) as {
        data?: { seriesCountByMetricName?: { name: string; value: number }[] };
      };
      return (
        body.data?.seriesCountByMetricName?.find((m) => m.name === CARDINALITY_SCENARIO_METRIC)?.value ?? 0
      );
    },
    /** One instant query's single value (0 for an empty answer). */
    scalar: async (query: string) => {
      const res = await call(`/api/v1/query?query=${encodeURIComponent(query)}`);
      const body = (await res.json()) as { data?: { result?: { value: [number, string] }[] } };
      return Number(body.data?.result?.[0]?.value[1] ?? 0);
    },
  };
}

export function cardinalityExplosionScenario(deps: CardinalityExplosionDeps): Scenario {
  const o: Required<CardinalityExplosionOptions> = {
    steadyS: deps.options?.steadyS ?? 4,
    burstS: deps.options?.burstS ?? 8,
    usersPerS: deps.options?.usersPerS ?? 50,
    ceiling: deps.options?.ceiling ?? 100,
  };
  const steadyCount = ROUTES.length * STATUSES.length;
  return {
    id: "cardinality-explosion",
    title: "A user_id tag appears: cardinality explodes",
    line: `A tenant of its own writes ${steadyCount} steady series, then tags every sample with a fresh user_id (${o.usersPerS} new series/s): its ceiling of ${o.ceiling} series per metric refuses the rest, the owner's ${ALERT} alert fires off the stream, and ingest keeps answering (MT-13, MT-16).`,
    xLabel: "s from the start",
    yLabel: "series, samples",
    run: async (ctx) => {
      const alerts = deps.alerts;
      if (alerts === undefined)
        throw new Error(
          "this process runs no stream consumers (METRICS_INGEST_PATH=direct or METRICS_CONSUMERS=off): the hot writer refuses and the evaluator alerts; run it where both run",
        );
      return runExplosion(ctx, deps, alerts, o, steadyCount);
    },
  };
}

async function runExplosion(
  ctx: ScenarioContext,
  deps: CardinalityExplosionDeps,
  alerts: NonNullable<CardinalityExplosionDeps["alerts"]>,
  o: Required<CardinalityExplosionOptions>,
  steadyCount: number,
): Promise<string> {
  const t0Ms = Date.now();
  const id = `cardinality-scenario-${t0Ms.toString(36)}`;
  const created = await deps.tenants.createIfAbsent({
    id,
    name: "scenario: cardinality explosion",
    maxSeriesPerMetric: o.ceiling,
    maxSeries: 10 * o.ceiling,
  });
  if (created === undefined) throw new Error(`tenant ${id} exists already: start the run again`);
  const api = tenantApi(deps.baseUrl(), created.apiKey.key, ctx.signal);
  // Every steady series' samples so far: the line that keeps climbing through the explosion.
  const steadySamplesQuery = `sum(count_over_time(${CARDINALITY_SCENARIO_METRIC}{user_id=""}[10m]))`;
  const refusedQuery = `sum(sum_over_time(${REFUSED_SERIES_METRIC}{metric="${CARDINALITY_SCENARIO_METRIC}"}[10m]))`;
  const firing = () => alerts().some((a) => a.tenant === id && a.alertname === ALERT && a.state === "firing");
  const burstFromS = o.steadyS;
  const burstToS = o.steadyS + o.burstS;
  // The alert may take an evaluation interval after the first refusal, and the stream's hop.
  const waitBoundS = Math.min(
    (RUN_BUDGET_MS - 2_000) / 1_000,
    burstToS + (2 * deps.alertIntervalMs) / 1_000 + 5,
  );
  const answers: { status: number; ms: number }[] = [];
  let users = 0;
  let firedS: number | undefined;
  let stored = 0;
  let refused = 0;
  let tick = 0;
  for (; ; tick++) {
    const atS = tick * (TICK_MS / 1_000);
    if (atS >= burstToS && (firedS !== undefined || atS >= waitBoundS)) break;
    // A machine so loaded that the seconds slip: stop writing in time to settle within the bound.
    if (Date.now() - t0Ms >= RUN_BUDGET_MS - SETTLE_MS) break;
    await sleep(Math.max(0, t0Ms + tick * TICK_MS - Date.now()), undefined, { signal: ctx.signal });
    const nowMs = Date.now();
    const series = steadySeries(tick, nowMs);
    if (atS >= burstFromS && atS < burstToS) {
      series.push(...userSeries(users, o.usersPerS, nowMs));
      users += o.usersPerS;
    }
    const answer = await api.push(series);
    answers.push(answer);
    let steadySamples = 0;
    [stored, refused, steadySamples] = await Promise.all([
      api.storedSeries(),
      api.scalar(refusedQuery),
      api.scalar(steadySamplesQuery),
    ]);
    const x = Math.round((Date.now() - t0Ms) / 100) / 10;
    if (firedS === undefined && firing()) firedS = x;
    ctx.point("series stored", x, stored);
    ctx.point("new series refused", x, refused);
    ctx.point("steady samples stored", x, steadySamples);
    ctx.point(`owner's ${ALERT} (at the ceiling: firing)`, x, firedS === undefined ? 0 : o.ceiling);
    ctx.progress(Math.min(0.95, atS / waitBoundS));
  }
  const steadyTicks = tick;
  // The hot writer applies after the 204: wait (bounded) until every write is accounted for.
  let steadyKept = 0;
  const settleUntilMs = Math.min(Date.now() + SETTLE_MS, t0Ms + RUN_BUDGET_MS);
  for (;;) {
    [stored, refused, steadyKept] = await Promise.all([
      api.storedSeries(),
      api.scalar(refusedQuery),
      api.scalar(`min(count_over_time(${CARDINALITY_SCENARIO_METRIC}{user_id=""}[10m]))`),
    ]);
    const settled = stored - steadyCount + refused === users && steadyKept === steadyTicks;
    if (settled || Date.now() > settleUntilMs) break;
    await sleep(200, undefined, { signal: ctx.signal });
  }
  const not204 = answers.filter((a) => a.status !== 204).length;
  const slowestMs = Math.round(Math.max(...answers.map((a) => a.ms)));
  const medianMs = Math.round([...answers.map((a) => a.ms)].sort((a, b) => a - b)[answers.length >> 1] ?? 0);
  const accepted = stored - steadyCount;
  const alertPart =
    firedS === undefined
      ? `the owner's ${ALERT} alert was not firing ${Math.round(waitBoundS)} s in (evaluated every ${deps.alertIntervalMs / 1_000} s)`
      : `the owner's ${ALERT} alert fired at ${firedS.toFixed(1)} s` +
        `, ${(firedS - burstFromS).toFixed(1)} s after the user_id tag appeared` +
        ` (evaluated off the stream every ${deps.alertIntervalMs / 1_000} s)`;
  return (
    `${steadyCount} steady series, then ${users} samples each with a fresh user_id: ${accepted} new series admitted up to the ceiling of ${o.ceiling} per metric, ` +
    `${refused} refused; ${alertPart}; ingest answered ${answers.length - not204} of ${answers.length} writes 204 (median ${medianMs} ms, slowest ${slowestMs} ms) ` +
    `and the steady series kept every sample (${steadyKept} of ${steadyTicks} each), tenant ${id}.`
  );
}

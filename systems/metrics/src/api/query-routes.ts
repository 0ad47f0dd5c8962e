/**
 * Prometheus's HTTP query API over the tenant's TSDB, in Prometheus's response shapes so
 * clients built for Prometheus (Grafana's data source, promtool) work unchanged:
 * `/api/v1/query`, `/api/v1/query_range`, `/api/v1/series`, `/api/v1/labels`,
 * `/api/v1/label/<name>/values` (GET, or POST with a urlencoded form), and
 * `/api/v1/status/tsdb` — the cardinality per metric and per label, the operator's view of
 * MT-13/16. Values are strings (`"1.5"`, `"NaN"`, `"+Inf"`), times Unix seconds.
 *
 * @example
 * // GET /api/v1/query?query=sum(rate(http_requests_total[5m]))&time=1700000000
 * // → {"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"12.5"]}]}}
 */
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { LabelMatcher } from "../domain/label-matcher.ts";
import { type Labels, labelsToRecord, seriesKey } from "../domain/labels.ts";
import type { Expr } from "../domain/promql-ast.ts";
import { PromqlEngine } from "../domain/promql-engine.ts";
import { PromqlSyntaxError, parsePromql } from "../domain/promql-parser.ts";
import { RollupQueryError } from "../domain/promql-rollup.ts";
import { formatFloat, PromqlEvalError, type Value } from "../domain/promql-values.ts";
import { errors } from "../errors.ts";
import type { Tenant } from "../store/tenant-repository.ts";
import type { TenantTsdbs } from "../store/tenant-tsdbs.ts";
import type { Tsdb } from "../store/tsdb.ts";
import {
  invalidParam,
  type Params,
  param,
  params,
  parseDurationParam,
  parseTimeParam,
  requireParam,
} from "./prometheus-params.ts";
import { type QueryTiers, type TieredRead, tieredInstant, tieredRange } from "./tiered-query.ts";

export interface QueryOptions {
  readonly tsdbs: TenantTsdbs;
  readonly clock: Clock;
  readonly tenantOf: (request: FastifyRequest) => Tenant;
  readonly lookbackMs: number;
  readonly maxSamples: number;
  /** MT-12: the query router's tiers; undefined = raw only. */
  readonly tiers?: QueryTiers | undefined;
}

/** The Prometheus version whose API and PromQL this one follows (its test files pass here). */
export const PROMETHEUS_API_VERSION = "2.42.0";
/** Top entries per list in /status/tsdb, as Prometheus shows. */
const STATUS_TOP = 10;
const MIN_TIME_MS = -9_223_372_036_854;
const MAX_TIME_MS = 9_223_372_036_854;

function parse(text: string): Expr {
  try {
    return parsePromql(text);
  } catch (error) {
    if (error instanceof PromqlSyntaxError) {
      throw errors.create("METRICS_QUERY_INVALID", {
        detail: `invalid parameter "query": 1:${error.position + 1}: parse error: ${error.message}`,
        fields: { field: "query", position: error.position },
      });
    }
    throw error;
  }
}

function evaluationError(error: unknown): unknown {
  if (error instanceof PromqlEvalError)
    return errors.create("METRICS_QUERY_FAILED", { detail: error.message });
  if (error instanceof RollupQueryError) {
    return errors.create("METRICS_QUERY_TIER_UNSUPPORTED", {
      detail: `invalid parameter "query": ${error.message}`,
      fields: { field: "query" },
    });
  }
  return error;
}

function evaluate<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw evaluationError(error);
  }
}

const seconds = (ms: number) => ms / 1000;
/**
 * MT-12: which tier answered which steps of a range query (`1m;1700000000-1700003600, raw;…`),
 * or an instant query (`1m;1700000000-1700000000`).
 */
export const TIERS_HEADER = "x-metrics-tiers";

function resultOf(value: Value, timeMs: number) {
  switch (value.type) {
    case "scalar":
      return { resultType: "scalar", result: [seconds(timeMs), formatFloat(value.v)] };
    case "string":
      return { resultType: "string", result: [seconds(timeMs), value.v] };
    case "vector":
      return {
        resultType: "vector",
        result: value.samples.map((s) => ({
          metric: labelsToRecord(s.labels),
          value: [seconds(timeMs), formatFloat(s.v)],
        })),
      };
    case "matrix":
      return {
        resultType: "matrix",
        result: [...value.series]
          .sort((a, b) => (seriesKey(a.labels) < seriesKey(b.labels) ? -1 : 1))
          .map((s) => ({
            metric: labelsToRecord(s.labels),
            values: s.ts.map((t, i) => [seconds(t), formatFloat(s.vs[i]!)]),
          })),
      };
  }
}

/** The selectors of `match[]`, each parsed as a PromQL vector selector. */
function matchersOf(p: Params): LabelMatcher[][] {
  return params(p, "match[]").map((text) => {
    const expr = parse(text);
    if (expr.kind !== "vector")
      invalidParam("match[]", `invalid parameter "match[]": ${text} is not a series selector`);
    return [...expr.matchers];
  });
}

function timeRange(p: Params): [number, number] {
  const start = param(p, "start");
  const end = param(p, "end");
  return [
    start === undefined ? MIN_TIME_MS : parseTimeParam(start, "start"),
    end === undefined ? MAX_TIME_MS : parseTimeParam(end, "end"),
  ];
}

function seriesOf(db: Tsdb, p: Params): Labels[] {
  const [mint, maxt] = timeRange(p);
  const found = new Map<string, Labels>();
  for (const matchers of matchersOf(p)) {
    for (const s of db.select(matchers, mint, maxt)) found.set(seriesKey(s.labels), s.labels);
  }
  return [...found.values()];
}

function statusTsdb(db: Tsdb) {
  const top = (entries: Iterable<[string, number]>) =>
    [...entries]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, STATUS_TOP)
      .map(([name, value]) => ({ name, value }));
  const index = db.head.index;
  const pairCounts: Array<[string, number]> = [];
  const memory: Array<[string, number]> = [];
  for (const name of index.labelNames()) {
    let bytes = 0;
    for (const [value, count] of index.seriesCountsByValue(name)) {
      pairCounts.push([`${name}=${value}`, count]);
      bytes += value.length * count;
    }
    memory.push([name, bytes]);
  }
  const range = db.head.timeRange();
  let numLabelPairs = 0;
  for (const count of index.valueCounts().values()) numLabelPairs += count;
  return {
    headStats: {
      numSeries: db.head.seriesCount,
      numLabelPairs,
      chunkCount: db.head.chunkCount,
      minTime: range?.mint ?? MAX_TIME_MS,
      maxTime: range?.maxt ?? MIN_TIME_MS,
    },
    seriesCountByMetricName: top(db.head.seriesPerMetric()),
    labelValueCountByLabelName: top(index.valueCounts()),
    memoryInBytesByLabelName: top(memory),
    seriesCountByLabelValuePair: top(pairCounts),
  };
}

export function registerQueryRoutes(scope: FastifyInstance, options: QueryOptions): void {
  scope.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: 1024 * 1024 },
    (_r, body, done) => {
      const form: Record<string, string | string[]> = {};
      for (const [key, value] of new URLSearchParams(String(body))) {
        const seen = form[key];
        form[key] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value];
      }
      done(null, form);
    },
  );
  const paramsOf = (request: FastifyRequest): Params => ({
    ...(request.query as Params),
    ...((request.body as Params | undefined) ?? {}),
  });
  const dbOf = (request: FastifyRequest) => options.tsdbs.of(options.tenantOf(request));
  const engineOf = (db: Tsdb) =>
    new PromqlEngine(
      { select: (matchers, mint, maxt) => db.select(matchers, mint, maxt) },
      { lookbackMs: options.lookbackMs, maxSamples: options.maxSamples },
    );
  /** What the query router needs of a request (MT-12). */
  const readOf = async (request: FastifyRequest, expr: Expr, tiers: QueryTiers): Promise<TieredRead> => ({
    expr,
    nowMs: options.clock.nowMs(),
    tenant: options.tenantOf(request).id,
    db: await dbOf(request),
    rollups: tiers.rollups,
    settings: { ...tiers, lookbackMs: options.lookbackMs, maxSamples: options.maxSamples },
  });
  const both = (
    path: string,
    summary: string,
    handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  ) => {
    for (const method of ["GET", "POST"] as const) {
      scope.route({
        method,
        url: path,
        schema: { summary, tags: ["query"] },
        handler: async (request, reply) => ({ status: "success", data: await handler(request, reply) }),
      });
    }
  };

  both("/api/v1/query", "Evaluate a PromQL expression at one time", async (request, reply) => {
    const p = paramsOf(request);
    const expr = parse(requireParam(p, "query"));
    const time = param(p, "time");
    const timeMs = time === undefined ? options.clock.nowMs() : parseTimeParam(time, "time");
    const tiers = options.tiers;
    if (tiers === undefined) {
      const engine = engineOf(await dbOf(request));
      return resultOf(
        evaluate(() => engine.instant(expr, timeMs)),
        timeMs,
      );
    }
    // MT-12: a query reading past the raw retention goes to the rollup tier holding it.
    const routed = await tieredInstant({ ...(await readOf(request, expr, tiers)), timeMs }).catch(
      (error: unknown) => {
        throw evaluationError(error);
      },
    );
    reply.header(TIERS_HEADER, `${routed.tier};${seconds(timeMs)}-${seconds(timeMs)}`);
    return resultOf(routed.value, timeMs);
  });

  both(
    "/api/v1/query_range",
    "Evaluate a PromQL expression at each step of a range",
    async (request, reply) => {
      const p = paramsOf(request);
      const expr = parse(requireParam(p, "query"));
      const startMs = parseTimeParam(requireParam(p, "start"), "start");
      const endMs = parseTimeParam(requireParam(p, "end"), "end");
      const stepMs = parseDurationParam(requireParam(p, "step"), "step");
      if (endMs < startMs)
        invalidParam("end", 'invalid parameter "end": end timestamp must not be before start time');
      if ((endMs - startMs) / stepMs > 11_000) {
        invalidParam(
          "step",
          "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
        );
      }
      const tiers = options.tiers;
      if (tiers === undefined) {
        const engine = engineOf(await dbOf(request));
        return resultOf(
          evaluate(() => engine.range(expr, { startMs, endMs, stepMs })),
          endMs,
        );
      }
      // MT-12: the router picks a tier per run of steps and joins them.
      const read = await readOf(request, expr, tiers);
      const routed = await tieredRange({ ...read, startMs, endMs, stepMs }).catch((error: unknown) => {
        throw evaluationError(error);
      });
      reply.header(
        TIERS_HEADER,
        routed.segments.map((s) => `${s.tier};${seconds(s.startMs)}-${seconds(s.endMs)}`).join(", "),
      );
      return resultOf(routed.value, endMs);
    },
  );

  both("/api/v1/series", "The series matching one or more selectors", async (request) => {
    const p = paramsOf(request);
    if (params(p, "match[]").length === 0) invalidParam("match[]", "no match[] parameter provided");
    return seriesOf(await dbOf(request), p).map(labelsToRecord);
  });

  both("/api/v1/labels", "Label names", async (request) => {
    const p = paramsOf(request);
    const db = await dbOf(request);
    if (params(p, "match[]").length === 0) return db.labelNames();
    return [...new Set(seriesOf(db, p).flatMap((labels) => labels.map(([name]) => name)))].sort();
  });

  both("/api/v1/label/:name/values", "Values of one label", async (request) => {
    const p = paramsOf(request);
    const { name } = request.params as { name: string };
    if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) invalidParam("name", `invalid label name: "${name}"`);
    const db = await dbOf(request);
    if (params(p, "match[]").length === 0) return db.labelValues(name);
    const values = seriesOf(db, p).flatMap((labels) => labels.filter(([n]) => n === name).map(([, v]) => v));
    return [...new Set(values)].sort();
  });

  // Grafana's Prometheus data source asks these to learn the server's flavour and metric help;
  // answered in Prometheus's shapes (metadata: none kept yet).
  scope.get(
    "/api/v1/status/buildinfo",
    { schema: { summary: "Build information, as Prometheus reports it", tags: ["query"] } },
    async () => ({
      status: "success",
      data: {
        version: PROMETHEUS_API_VERSION,
        revision: "casebook-metrics",
        branch: "",
        buildUser: "",
        buildDate: "",
        goVersion: "",
      },
    }),
  );
  scope.get(
    "/api/v1/metadata",
    { schema: { summary: "Metric metadata (none kept yet: an empty map)", tags: ["query"] } },
    async () => ({
      status: "success",
      data: {},
    }),
  );

  scope.get(
    "/api/v1/status/tsdb",
    {
      schema: {
        summary: "Head cardinality: series per metric, values per label (MT-16's view)",
        tags: ["query"],
      },
    },
    async (request) => ({ status: "success", data: statusTsdb(await dbOf(request)) }),
  );
}

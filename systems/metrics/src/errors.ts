/**
 * The one error registry of metrics: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with and a message that tells the reader what to do, grouped by area.
 * Under `/api/v1/` the edge writes them in Prometheus's error shape
 * (`api/prometheus-errors.ts`); elsewhere as RFC 9457 problem+json.
 *
 * @example
 * throw errors.create("METRICS_WRITE_INVALID", { detail: "label name \"1x\" is not valid", fields: { field: "timeseries[0].labels" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // ingest (api/ingest-routes.ts): nothing of a refused batch is stored
  METRICS_WRITE_MALFORMED: {
    status: 400,
    message:
      "The body is not a snappy-compressed remote-write WriteRequest (or the agent's JSON batch); fix the encoding.",
  },
  METRICS_WRITE_INVALID: {
    status: 400,
    message: "A series or sample of the batch breaks the rules; the field names it.",
  },
  METRICS_WRITE_OUT_OF_ORDER: {
    status: 400,
    message:
      "A sample is older than the series' newest, or repeats its timestamp with another value; send each series in time order.",
  },
  METRICS_SERIES_LIMIT: {
    status: 400,
    message:
      "New series past the tenant's or the metric's cardinality limit were refused (the rest of the batch was stored); drop the high-cardinality label.",
  },
  METRICS_STREAM_UNAVAILABLE: {
    status: 503,
    message: "The stream did not acknowledge the batch; nothing is promised stored — send it again.",
  },
  // the start (config.ts): a setting that parses alone but not with the others
  METRICS_CONFIG_INVALID: {
    status: 500,
    message: "A setting is not valid; the message names it and says what it accepts. Fix it and start again.",
  },
  // query (api/query-routes.ts)
  METRICS_QUERY_INVALID: {
    status: 400,
    message: "The query or a parameter is not valid; the message says which.",
  },
  METRICS_QUERY_TIER_UNSUPPORTED: {
    status: 400,
    message:
      "The query router picked a rollup tier (by the range and step) and the query needs raw samples there; the message lists what a rollup tier answers.",
  },
  METRICS_QUERY_FAILED: { status: 422, message: "The query could not be evaluated; the message says why." },
  // admin (api/admin-routes.ts)
  METRICS_TENANT_EXISTS: { status: 409, message: "A tenant with this id exists; pick another id." },
  METRICS_TENANT_NOT_FOUND: { status: 404, message: "No tenant with this id." },
  // the agent process (api/agent-routes.ts)
  METRICS_AGENT_RECORD_INVALID: {
    status: 400,
    message:
      "A record of the flush breaks the rules (name, labels, value, buckets); the field names it. Nothing of it was applied.",
  },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;

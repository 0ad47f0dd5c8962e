/**
 * Errors under `/api/v1/` in Prometheus's own shape, so Prometheus's clients (Grafana's data
 * source, promtool, remote-write senders logging the body) read them:
 * `{"status":"error","errorType":"bad_data","error":"<message>"}` — `bad_data` for a 4xx,
 * `execution` for a query that failed (422), `unavailable`/`internal` for a 5xx. The house's
 * code and field errors ride along as extra members (clients ignore them).
 *
 * @example
 * createService({ name: "metrics", version, errorFormats: [prometheusErrorFormat("/api/v1/")] });
 */
import type { ErrorFormat } from "@casebook/infra/http/error-handling";
import type { Problem } from "@casebook/infra/http/problem";

export function prometheusErrorType(status: number): string {
  if (status === 422) return "execution";
  if (status === 404) return "not_found";
  if (status === 401 || status === 403) return "unauthorized";
  if (status === 503) return "unavailable";
  if (status >= 500) return "internal";
  return "bad_data";
}

export function prometheusErrorOf(problem: Problem) {
  const { type: _t, title: _ti, instance: _i, detail, status, ...extensions } = problem;
  // `status` is Prometheus's "error"; the HTTP status rides along as `httpStatus`.
  return {
    status: "error",
    errorType: prometheusErrorType(status),
    error: detail,
    httpStatus: status,
    ...extensions,
  };
}

export function prometheusErrorFormat(pathPrefix: string): ErrorFormat {
  return {
    pathPrefix,
    contentType: "application/json; charset=utf-8",
    body: (problem) => JSON.stringify(prometheusErrorOf(problem)),
  };
}

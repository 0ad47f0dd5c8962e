/**
 * The access log: ONE line per request, written when the response is done (`onResponse`),
 * instead of Fastify's two ("incoming request", "request completed"). The line carries
 * `method`, `route` (the pattern: `/v1/links/:id`), `url` (the path; the query string may
 * hold tokens), `status`, `durationMs`, the problem's `code` on an error and, through the
 * request's logger, `requestId`.
 *
 * Levels, and why:
 * - 2xx/3xx at `info`: the record of what the service did.
 * - 4xx at `info`, but at most `clientErrorLinesPerS` lines a second for the whole service;
 *   the rest are counted (`http_access_log_suppressed_total{reason="client_error"}`) and the
 *   next 4xx line written carries `suppressed: <n>`. A client in a reconnect loop or a 404
 *   scan can send thousands a second: each line costs a write syscall (the logger is
 *   synchronous), so an unbounded 4xx log is a way to slow the service from outside. The
 *   count keeps the volume visible; a bound, not `debug`, keeps the first ones readable.
 * - 5xx at `warn`, always: the failure itself (stack, cause) is logged once at `error` by
 *   the error handler; the access line at `error` would count every failure twice in alerts.
 *
 * Per route, `config: { accessLog }` picks a policy for hot routes:
 * - `"on"` (default): as above.
 * - `"sampled"`: at most `sampledLinesPerS` lines a second for the route, the rest counted
 *   (`reason="sampled"`); 5xx always. For a redirect or lookup route at tens of thousands of
 *   requests a second, where the metrics histogram is the record and a line a second shows
 *   what the traffic looks like.
 * - `"own"`: the route writes its own record (a delivery log, a stream's summary), which is
 *   its access log: no access line for 2xx/3xx; 4xx (bounded as above) and 5xx are still
 *   written, since a refused or failed request usually never reached the route's own record.
 * - `"off"`: no access line at all: the operator routes (probes and scrapes every few
 *   seconds from every replica), whose failures the error handler still logs.
 *
 * @example
 * app.get("/:code", { config: { accessLog: "sampled" } }, redirect);
 * // {"level":"info","msg":"request","method":"GET","route":"/:code","url":"/abc","status":302,
 * //  "durationMs":0.4,"requestId":"…","suppressed":18234}
 */
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Counter, type Registry } from "prom-client";

export const accessLogPolicies = ["on", "sampled", "own", "off"] as const;
export type AccessLogPolicy = (typeof accessLogPolicies)[number];

declare module "fastify" {
  interface FastifyContextConfig {
    /** How this route's requests reach the access log (see access-log.ts); default `"on"`. */
    accessLog?: AccessLogPolicy;
  }
}

/** 10 4xx lines a second per service: enough to see who is failing and why, bounded under a flood. */
export const defaultClientErrorLinesPerS = 10;
/** One line a second per sampled route: a glimpse of the traffic; the histogram holds the numbers. */
export const defaultSampledLinesPerS = 1;

export interface AccessLogOptions {
  registry: Registry;
  clock: Clock;
  clientErrorLinesPerS?: number;
  sampledLinesPerS?: number;
}

/** The error code of a problem+json answer, for its access line; an entry goes away with its reply. */
const problemCodes = new WeakMap<FastifyReply, string>();

/** Called by the error handler as it answers a problem: the access line then names its `code`. */
export function noteProblemCode(reply: FastifyReply, code: string): void {
  problemCodes.set(reply, code);
}

/** The message of every access line, so a pipeline can select them. */
export const ACCESS_LOG_MESSAGE = "request";

/**
 * A fixed one-second window allowing `maxPerS` lines, counting the ones it refuses. Fixed,
 * not sliding: a burst at a window edge may write up to 2× the bound in a second, which is
 * fine for a log and costs two numbers instead of a queue of timestamps.
 */
class LineBudget {
  #windowS = -1;
  #used = 0;
  #suppressed = 0;
  readonly #maxPerS: number;

  constructor(maxPerS: number) {
    this.#maxPerS = maxPerS;
  }

  /** undefined when the line must be dropped; else how many were dropped since the last one written. */
  take(nowMs: number): number | undefined {
    const windowS = Math.floor(nowMs / 1000);
    if (windowS !== this.#windowS) {
      this.#windowS = windowS;
      this.#used = 0;
    }
    if (this.#used >= this.#maxPerS) {
      this.#suppressed += 1;
      return undefined;
    }
    this.#used += 1;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    return suppressed;
  }
}

function checkRate(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0)
    throw new RangeError(`${name} must be an integer >= 0, got ${value}`);
  return value;
}

/** The path part of a URL: the query string may carry tokens (`?token=…`) and must not be logged. */
function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

/**
 * Adds the access log's `onResponse` hook. Fastify's own request lines must be off
 * (`disableRequestLogging: true`), or each request is logged three times.
 */
export function installAccessLog(app: FastifyInstance, options: AccessLogOptions): void {
  const clientErrors = new LineBudget(
    checkRate("clientErrorLinesPerS", options.clientErrorLinesPerS ?? defaultClientErrorLinesPerS),
  );
  const sampledLinesPerS = checkRate("sampledLinesPerS", options.sampledLinesPerS ?? defaultSampledLinesPerS);
  // One budget per sampled route pattern: bounded by the number of routes registered.
  const sampled = new Map<string, LineBudget>();
  const suppressedTotal = new Counter({
    name: "http_access_log_suppressed_total",
    help: "Access log lines not written because a bound was reached (reason: client_error, sampled).",
    labelNames: ["reason"],
    registers: [options.registry],
  });
  // A typo in a route's policy fails its registration, not every request (nor silently means "on").
  app.addHook("onRoute", (route) => {
    const policy = (route.config as { accessLog?: unknown } | undefined)?.accessLog;
    if (policy !== undefined && !accessLogPolicies.includes(policy as AccessLogPolicy)) {
      throw new TypeError(`route ${route.url}: accessLog must be one of ${accessLogPolicies.join(", ")}`);
    }
  });
  app.addHook("onResponse", async (request, reply) => {
    const policy = request.routeOptions.config.accessLog ?? "on";
    const status = reply.statusCode;
    if (policy === "off") return;
    if (status >= 500) return write(request, reply, "warn");
    let budget: LineBudget | undefined;
    let reason: "client_error" | "sampled" | undefined;
    if (policy === "sampled") {
      const route = request.routeOptions.url ?? "";
      budget = sampled.get(route) ?? new LineBudget(sampledLinesPerS);
      sampled.set(route, budget);
      reason = "sampled";
    } else if (status >= 400) {
      budget = clientErrors;
      reason = "client_error";
    } else if (policy === "own") {
      return;
    }
    if (budget === undefined || reason === undefined) return write(request, reply, "info");
    const suppressed = budget.take(options.clock.monotonicMs());
    if (suppressed === undefined) return void suppressedTotal.inc({ reason });
    write(request, reply, "info", suppressed);
  });
}

function write(request: FastifyRequest, reply: FastifyReply, level: "info" | "warn", suppressed = 0): void {
  const line: Record<string, unknown> = {
    method: request.method,
    route: request.routeOptions.url ?? null,
    url: pathOf(request.url),
    status: reply.statusCode,
    // 0.1 ms: finer is noise from the event loop, coarser hides a fast route's changes.
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
  };
  const code = problemCodes.get(reply);
  if (code !== undefined) line.code = code;
  if (suppressed > 0) line.suppressed = suppressed;
  // reply.log, not request.log: a route may bind fields to it (payments' correlationId).
  reply.log[level](line, ACCESS_LOG_MESSAGE);
}

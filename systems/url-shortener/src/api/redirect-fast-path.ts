/**
 * The redirect's fast path (issue 18: redirects at the HTTP stack's limit). Fastify's routing,
 * hooks and reply machinery cost about a third of a bare `node:http` server's throughput on a
 * 302 with no body; this answers the common case — `GET /{code}` with no query and no body,
 * whose link is in this process's LRU and is a redirect — straight on node:http, before
 * Fastify sees the request. Everything else (a miss that needs the store, a query string that
 * the text guard must see, a 404/410 page, HEAD, a closing service) goes to Fastify unchanged.
 *
 * The contract kept, so a client cannot tell the two paths apart (test/main.test.ts):
 * the same status, Location and Cache-Control (redirect-route.ts's `RedirectCore` and
 * `redirectHeaders`, shared), `X-Request-Id` (the caller's when safe, else a fresh UUID —
 * infra's rule), the edge's visit marker, the outcome counter, the visit recorded in the click
 * buffer, and the request in infra's `http_request_duration_seconds` under route `/:code`. The
 * redirect writes no access line either way (`accessLog: "own"`).
 *
 * It sits in front of Fastify's own `request` listener on the same server, so the server keeps
 * every timeout the service base set on it. It never shadows another route: it answers only
 * codes found in the LRU, and only the Fastify `/:code` route fills the LRU — a path a static
 * route owns (`/healthz`, `/metrics`, even if a link took that alias) never reaches it, so it
 * is never cached.
 *
 * @example
 * installRedirectFastPath(service.app.server, { core, reader, clock, closing: () => service.closing, registry });
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { httpDurationHistogramOf } from "@casebook/infra/http/metrics";
import type { HistogramChild } from "@casebook/infra/http/request-histogram";
import { requestIdGenerator } from "@casebook/infra/http/request-id";
import type { Clock } from "@casebook/kit/clock";
import type { Registry } from "prom-client";
import { CODE_PATTERN } from "../domain/link-rules.ts";
import type { ResolvedLink } from "../domain/redirect-decision.ts";
import { VISIT_MARKER_HEADER } from "../edge/nginx-edge-config.ts";
import { type RedirectCore, redirectHeaders } from "./redirect-route.ts";

/** A read path that can answer from memory without waiting: the LRU's hit, or undefined. */
export interface CachedPeek {
  peek(domain: string, code: string): ResolvedLink | undefined;
}

export interface FastPathOptions {
  core: RedirectCore;
  reader: CachedPeek;
  clock: Clock;
  /** True once the service is closing: Fastify then answers 503 SERVICE_CLOSING with Connection: close. */
  closing: () => boolean;
  /** Where infra's `http_request_duration_seconds` lives (service.registry). */
  registry: Registry;
}

const ROUTE = "/:code";
const SLASH = 47;

type Listener = (request: IncomingMessage, response: ServerResponse) => void;

/** A redirect's header block but for the request id, flat (name, value, …) as `writeHead` takes it. */
interface PreparedRedirect {
  readonly status: number;
  readonly headers: readonly string[];
}

/**
 * The answer of a link that never expires is the same on every request (its Location and
 * Cache-Control depend on nothing else once the query is ruled out): built once per cached
 * link object and kept beside it. A link with an expiry gets its max-age from the clock each
 * time (US-12), so it is built per request.
 */
function preparedRedirects(core: RedirectCore) {
  const prepared = new WeakMap<ResolvedLink, PreparedRedirect>();
  const build = (link: ResolvedLink, nowMs: number): PreparedRedirect | undefined => {
    const decision = core.decide(link, nowMs, "");
    if (decision.kind !== "redirect") return undefined;
    const { location, "cache-control": cacheControl } = redirectHeaders(decision);
    return {
      status: decision.status,
      headers: ["location", location, "cache-control", cacheControl, "content-length", "0"],
    };
  };
  return (link: ResolvedLink, nowMs: number): PreparedRedirect | undefined => {
    if (link.expiresAtMs !== null || link.disabled) return build(link, nowMs);
    let answer = prepared.get(link);
    if (answer === undefined) {
      answer = build(link, nowMs);
      if (answer !== undefined) prepared.set(link, answer);
    }
    return answer;
  };
}

/** Answers the request when it can; false hands it to Fastify untouched. */
function fastAnswerer(options: FastPathOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  const { core, reader, clock, closing } = options;
  const requestId = requestIdGenerator();
  const prepare = preparedRedirects(core);
  const duration = httpDurationHistogramOf(options.registry);
  const timers = new Map<number, HistogramChild>();
  const timerOf = (status: number) => {
    let timer = timers.get(status);
    if (timer === undefined && duration !== undefined) {
      timer = duration.labels("GET", ROUTE, String(status));
      timers.set(status, timer);
    }
    return timer;
  };
  return (req, res) => {
    const url = req.url ?? "";
    if (req.method !== "GET" || url.charCodeAt(0) !== SLASH || closing()) return false;
    const code = url.slice(1);
    // The code's shape rules out "?", "/", "%" and every other path Fastify must route or guard.
    if (!CODE_PATTERN.test(code)) return false;
    const { headers } = req;
    if (headers["content-length"] !== undefined || headers["transfer-encoding"] !== undefined) return false;
    const startedMs = performance.now();
    const domain = core.domainOf(headers.host);
    const link = reader.peek(domain.host, code);
    if (link === undefined) return false;
    const nowMs = clock.nowMs();
    const answer = prepare(link, nowMs);
    if (answer === undefined) return false;
    const marker = core.settle(
      { headers, ip: req.socket.remoteAddress ?? "" },
      domain.host,
      code,
      answer.status,
      nowMs,
    );
    const out = ["x-request-id", requestId(req), ...answer.headers];
    if (marker) out.push(VISIT_MARKER_HEADER, "1");
    res.writeHead(answer.status, out).end();
    timerOf(answer.status)?.observe((performance.now() - startedMs) / 1_000);
    return true;
  };
}

/** What the fast path answered (the rest went to Fastify). */
export interface FastPathStats {
  readonly answered: number;
}

/** Puts the fast path in front of the server's one `request` listener (Fastify's). */
export function installRedirectFastPath(server: Server, options: FastPathOptions): FastPathStats {
  const listeners = server.listeners("request") as Listener[];
  if (listeners.length !== 1)
    throw new Error(`expected Fastify's one request listener, found ${listeners.length}`);
  const [fastify] = listeners as [Listener];
  const answer = fastAnswerer(options);
  const stats = { answered: 0 };
  server.removeListener("request", fastify);
  server.on("request", function fastPathFirst(this: Server, req: IncomingMessage, res: ServerResponse) {
    let answered: boolean;
    try {
      answered = answer(req, res);
    } catch (error) {
      // A bug here must not take the process down (an emitter's throw would): a request not yet
      // answered goes to Fastify, whose error handling answers and logs; a half-sent one is cut.
      if (res.headersSent) return void res.destroy(error as Error);
      answered = false;
    }
    if (answered) stats.answered += 1;
    else fastify.call(this, req, res);
  });
  return stats;
}

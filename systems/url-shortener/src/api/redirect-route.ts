/**
 * `GET /{code}`: the redirect (US-01, US-07, US-08, US-12, US-13). The short domain comes from
 * the Host header (each domain has its own codes; an unknown host is the default domain), the
 * link from the read path (in-process LRU, then the store by key), the answer from
 * domain/redirect-decision.ts: the link's 3xx with `Location` and `Cache-Control: max-age`
 * never past the link's expiry, or a small 404/410 page — never a redirect to a stale target.
 *
 * Nothing on this path writes to a database (US-15): the visit goes to the sink, which only
 * appends to a bounded in-memory buffer. That record is the route's access log
 * (`accessLog: "own"`), so a redirect writes no second log line. Behind the edge (a request
 * carrying the configured `X-Edge-Token`) the edge's access log is the record instead: the
 * answer carries the `X-Short-Link-Visit` marker the edge logs by, and nothing is recorded
 * here — each click counted once, from where it was served (edge/nginx-edge-config.ts).
 *
 * @example
 * registerRedirectRoute(app, { reader, domains, clock, visits, metrics });
 * // GET /q3ZxP0a → 302, Location: https://example.com/a, Cache-Control: max-age=300
 */
import { timingSafeEqual } from "node:crypto";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ShortDomain } from "../config.ts";
import { CODE_PATTERN } from "../domain/link-rules.ts";
import { cacheControlOf, decideRedirect } from "../domain/redirect-decision.ts";
import type { VisitSink } from "../domain/visit.ts";
import { EDGE_TOKEN_HEADER, VISIT_MARKER_HEADER } from "../edge/nginx-edge-config.ts";
import type { SystemMetrics } from "../metrics.ts";
import type { LinkResolver } from "../store/cached-link-reader.ts";
import { domainOf } from "./api-context.ts";

export interface RedirectOptions {
  reader: LinkResolver;
  domains: readonly ShortDomain[];
  clock: Clock;
  visits: VisitSink;
  metrics: SystemMetrics;
  /** Cache-Control stale-if-error of a link without expiry (URL_SHORTENER_STALE_IF_ERROR_S). */
  staleIfErrorS?: number;
  /** URL_SHORTENER_EDGE_TOKEN: requests carrying it are the edge's, counted from its log. */
  edgeToken?: string | undefined;
}

/** A matcher of the edge's token, constant-time; always false when none is configured. */
export function edgeTokenMatcher(
  token: string | undefined,
): (sent: string | string[] | undefined) => boolean {
  if (token === undefined) return () => false;
  const expected = Buffer.from(token);
  return (sent) => {
    if (typeof sent !== "string") return false;
    const given = Buffer.from(sent);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
}

const PAGES = {
  404: "<!doctype html><title>Link not found</title><h1>Link not found</h1><p>No short link has this code.</p>\n",
  410: "<!doctype html><title>Link gone</title><h1>This link is gone</h1><p>It expired or was disabled.</p>\n",
} as const;

function page(reply: FastifyReply, status: 404 | 410): FastifyReply {
  // no-store: a code created a second later must not be hidden behind a cached 404.
  return reply
    .code(status)
    .header("cache-control", "no-store")
    .type("text/html; charset=utf-8")
    .send(PAGES[status]);
}

export function registerRedirectRoute(app: FastifyInstance, options: RedirectOptions): void {
  const { reader, domains, clock, visits, metrics } = options;
  const fromEdge = edgeTokenMatcher(options.edgeToken);
  const staleIfErrorS = options.staleIfErrorS ?? 0;
  // A visit of a short domain's base (GET / with its Host): an orphan visit, counted apart as
  // Shlink does (code ""), whatever the landing route answers; by the edge's log behind it.
  app.addHook("onSend", async (request, reply, payload) => {
    if (request.routeOptions.url !== "/" || (request.method !== "GET" && request.method !== "HEAD"))
      return payload;
    const domain = domainOf(domains, request.headers.host ?? "");
    if (domain === undefined) return payload;
    if (fromEdge(request.headers[EDGE_TOKEN_HEADER])) reply.header(VISIT_MARKER_HEADER, "1");
    else
      visits.record({
        atMs: clock.nowMs(),
        domain: domain.host,
        code: "",
        status: reply.statusCode,
        referrer: request.headers.referer,
        userAgent: request.headers["user-agent"],
        ip: request.ip,
      });
    return payload;
  });
  app.get<{ Params: { code: string } }>(
    "/:code",
    // Hidden from /openapi.json: it answers redirects and pages, not JSON (the README documents it).
    { config: { accessLog: "own" }, schema: { hide: true } },
    async (request, reply) => {
      const domain = domainOf(domains, request.headers.host ?? "") ?? domains[0]!;
      const { code } = request.params;
      const nowMs = clock.nowMs();
      const link = CODE_PATTERN.test(code) ? await reader.resolve(domain.host, code) : undefined;
      const queryAt = request.url.indexOf("?");
      const decision = decideRedirect(link, {
        nowMs,
        query: queryAt === -1 ? "" : request.url.slice(queryAt + 1),
        staleIfErrorS,
      });
      const status = decision.kind === "redirect" ? decision.status : decision.kind === "gone" ? 410 : 404;
      metrics.redirects.inc({ outcome: String(status) });
      if (fromEdge(request.headers[EDGE_TOKEN_HEADER])) reply.header(VISIT_MARKER_HEADER, "1");
      else
        visits.record({
          atMs: nowMs,
          domain: domain.host,
          code,
          status,
          referrer: request.headers.referer,
          userAgent: request.headers["user-agent"],
          ip: request.ip,
        });
      if (decision.kind !== "redirect") return page(reply, status as 404 | 410);
      return reply
        .code(decision.status)
        .header("location", decision.location)
        .header("cache-control", cacheControlOf(decision))
        .send();
    },
  );
}

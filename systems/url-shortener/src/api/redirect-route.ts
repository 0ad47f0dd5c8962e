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
import type { IncomingHttpHeaders } from "node:http";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance, FastifyReply } from "fastify";
import type { ShortDomain } from "../config.ts";
import { CODE_PATTERN } from "../domain/link-rules.ts";
import {
  cacheControlOf,
  decideRedirect,
  type RedirectDecision,
  type ResolvedLink,
} from "../domain/redirect-decision.ts";
import type { VisitSink } from "../domain/visit.ts";
import { EDGE_TOKEN_HEADER, VISIT_MARKER_HEADER } from "../edge/nginx-edge-config.ts";
import type { SystemMetrics, Tally } from "../metrics.ts";
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

/** What both paths send for a redirect: the headers that make it one (US-01, US-08, US-12). */
export function redirectHeaders(decision: { location: string; maxAgeS: number; staleIfErrorS: number }): {
  location: string;
  "cache-control": string;
} {
  return { location: decision.location, "cache-control": cacheControlOf(decision) };
}

/** The request fields the answer needs, from Fastify's request or node:http's alike. */
export interface RedirectRequest {
  readonly headers: IncomingHttpHeaders;
  /** The client address (Fastify's `request.ip`, node:http's `socket.remoteAddress`). */
  readonly ip: string;
}

/**
 * The redirect's answer, shared by the Fastify route and the fast path
 * (redirect-fast-path.ts): the decision, its outcome counted, and the visit recorded — or,
 * from the edge, the marker its log counts by. `marker` is true when the answer must carry it.
 */
export class RedirectCore {
  readonly #options: RedirectOptions;
  readonly #fromEdge: (sent: string | string[] | undefined) => boolean;
  readonly #staleIfErrorS: number;
  /** The outcome counter's tallies by status (metrics.ts: plain numbers, drained at each scrape). */
  readonly #outcomes = new Map<number, Tally>();

  constructor(options: RedirectOptions) {
    this.#options = options;
    this.#fromEdge = edgeTokenMatcher(options.edgeToken);
    this.#staleIfErrorS = options.staleIfErrorS ?? 0;
  }

  get domains(): readonly ShortDomain[] {
    return this.#options.domains;
  }

  /** The short domain a Host names; an unknown host is the default domain. */
  domainOf(host: string | undefined): ShortDomain {
    const { domains } = this.#options;
    return domainOf(domains, host ?? "") ?? domains[0]!;
  }

  decide(link: ResolvedLink | undefined, nowMs: number, query: string): RedirectDecision {
    return decideRedirect(link, { nowMs, query, staleIfErrorS: this.#staleIfErrorS });
  }

  /** Counts the answer and records the visit (or asks for the edge's marker). Returns true when the marker is due. */
  settle(request: RedirectRequest, domain: string, code: string, status: number, nowMs: number): boolean {
    let outcome = this.#outcomes.get(status);
    if (outcome === undefined) {
      outcome = this.#options.metrics.redirectTallies.of(String(status));
      this.#outcomes.set(status, outcome);
    }
    outcome.inc();
    const { headers } = request;
    if (this.#fromEdge(headers[EDGE_TOKEN_HEADER])) return true;
    this.#options.visits.record(
      nowMs,
      domain,
      code,
      status,
      headers.referer,
      headers["user-agent"],
      request.ip,
    );
    return false;
  }

  /** The base-domain visit (GET / with a short domain's Host): an orphan visit. Returns true when the marker is due. */
  settleBase(request: RedirectRequest, status: number): boolean {
    const domain = domainOf(this.#options.domains, request.headers.host ?? "");
    if (domain === undefined) return false;
    if (this.#fromEdge(request.headers[EDGE_TOKEN_HEADER])) return true;
    const { headers } = request;
    const nowMs = this.#options.clock.nowMs();
    this.#options.visits.record(
      nowMs,
      domain.host,
      "",
      status,
      headers.referer,
      headers["user-agent"],
      request.ip,
    );
    return false;
  }
}

export function registerRedirectRoute(app: FastifyInstance, options: RedirectOptions): RedirectCore {
  const { reader, clock } = options;
  const core = new RedirectCore(options);
  // A visit of a short domain's base (GET / with its Host): an orphan visit, counted apart as
  // Shlink does (code ""), whatever the landing route answers; by the edge's log behind it.
  app.addHook("onSend", async (request, reply, payload) => {
    if (request.routeOptions.url !== "/" || (request.method !== "GET" && request.method !== "HEAD"))
      return payload;
    if (core.settleBase(request, reply.statusCode)) reply.header(VISIT_MARKER_HEADER, "1");
    return payload;
  });
  app.get<{ Params: { code: string } }>(
    "/:code",
    // Hidden from /openapi.json: it answers redirects and pages, not JSON (the README documents it).
    { config: { accessLog: "own" }, schema: { hide: true } },
    async (request, reply) => {
      const domain = core.domainOf(request.headers.host);
      const { code } = request.params;
      const nowMs = clock.nowMs();
      const link = CODE_PATTERN.test(code) ? await reader.resolve(domain.host, code) : undefined;
      const queryAt = request.url.indexOf("?");
      const decision = core.decide(link, nowMs, queryAt === -1 ? "" : request.url.slice(queryAt + 1));
      const status = decision.kind === "redirect" ? decision.status : decision.kind === "gone" ? 410 : 404;
      if (core.settle(request, domain.host, code, status, nowMs)) reply.header(VISIT_MARKER_HEADER, "1");
      if (decision.kind !== "redirect") return page(reply, status as 404 | 410);
      return reply.code(decision.status).headers(redirectHeaders(decision)).send();
    },
  );
  return core;
}

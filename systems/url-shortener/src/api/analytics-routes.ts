/**
 * Click analytics and QR codes of one link, in the workspace's scope (another workspace's
 * link is a 404):
 *
 *   GET /v1/links/{domain}/{code}/clicks?granularity=hour|day&from&to
 *       the rollup's series (bots excluded, counted apart), its totals, and the top referrers
 *       from the raw log — every number from the append-only store, never a counter on the link
 *   GET /v1/links/{domain}/{code}/qr?format=png|svg&size
 *       the short URL as a QR code (`qrcode`)
 *
 * @example
 * registerAnalyticsRoutes(scope, { links, clicks, domains, clock }, callerOf);
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance, FastifyRequest } from "fastify";
import QRCode from "qrcode";
import type { ShortDomain } from "../config.ts";
import { errors } from "../errors.ts";
import type { ClickStore, Granularity } from "../store/click-store.ts";
import type { LinkRepository } from "../store/link-repository.ts";
import { toLinkJson } from "./api-context.ts";
import type { Caller } from "./create-link.ts";
import { linkParams } from "./link-schemas.ts";

export interface AnalyticsOptions {
  links: LinkRepository;
  clicks: ClickStore;
  domains: readonly ShortDomain[];
  clock: Clock;
}

const tags = ["analytics"];
const DAY_MS = 86_400_000;
/** The widest range one query may cover: 400 days of daily buckets, 31 days of hourly ones. */
const MAX_RANGE_MS: Record<Granularity, number> = { hour: 31 * DAY_MS, day: 400 * DAY_MS };
const TOP_REFERRERS = 10;

const clicksQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    granularity: { type: "string", enum: ["hour", "day"], default: "day" },
    from: { type: "string", format: "date-time" },
    to: { type: "string", format: "date-time" },
  },
} as const;

const count = { type: "integer" } as const;
const clicksView = {
  type: "object",
  required: ["domain", "code", "granularity", "from", "to", "totals", "series", "topReferrers"],
  properties: {
    domain: { type: "string" },
    code: { type: "string" },
    granularity: { type: "string" },
    from: { type: "string", format: "date-time" },
    to: { type: "string", format: "date-time" },
    totals: {
      type: "object",
      required: ["clicks", "botClicks"],
      properties: { clicks: count, botClicks: count },
    },
    series: {
      type: "array",
      items: {
        type: "object",
        required: ["bucketStart", "clicks", "botClicks", "visitors"],
        properties: {
          bucketStart: { type: "string", format: "date-time" },
          clicks: count,
          botClicks: count,
          visitors: count,
        },
      },
    },
    topReferrers: {
      type: "array",
      items: {
        type: "object",
        required: ["referrer", "clicks"],
        properties: { referrer: { type: ["string", "null"] }, clicks: count },
      },
    },
  },
} as const;

type Params = { domain: string; code: string };

export function rangeOf(query: { granularity: Granularity; from?: string; to?: string }, nowMs: number) {
  const toMs = query.to === undefined ? nowMs + 1 : Date.parse(query.to);
  const fromMs =
    query.from === undefined
      ? toMs - (query.granularity === "hour" ? DAY_MS : 30 * DAY_MS)
      : Date.parse(query.from);
  if (!(fromMs < toMs)) {
    throw errors.create("LINK_INVALID", { fields: { field: "from", reason: "must be before `to`" } });
  }
  if (toMs - fromMs > MAX_RANGE_MS[query.granularity]) {
    const reason = `at most ${MAX_RANGE_MS[query.granularity] / DAY_MS} days of ${query.granularity} buckets`;
    throw errors.create("LINK_INVALID", { fields: { field: "from", reason } });
  }
  return { fromMs, toMs };
}

export function registerAnalyticsRoutes(
  app: FastifyInstance,
  options: AnalyticsOptions,
  callerOf: (request: FastifyRequest) => Caller,
): void {
  const { links, clicks, domains, clock } = options;
  const ownedLink = async (request: FastifyRequest, params: Params) => {
    const link = await links.get(callerOf(request).workspaceId, params.domain.toLowerCase(), params.code);
    if (!link)
      throw errors.create("LINK_NOT_FOUND", { fields: { domain: params.domain, code: params.code } });
    return link;
  };

  app.get<{ Params: Params; Querystring: { granularity: Granularity; from?: string; to?: string } }>(
    "/v1/links/:domain/:code/clicks",
    {
      schema: {
        summary: "Clicks of a link over time (bots excluded, counted apart), totals and top referrers",
        tags,
        security: bearerSecurity,
        errorCodes: ["LINK_NOT_FOUND", "LINK_INVALID"],
        params: linkParams,
        querystring: clicksQuery,
        response: { 200: clicksView },
      },
    },
    async (request) => {
      const link = await ownedLink(request, request.params);
      const { granularity } = request.query;
      const { fromMs, toMs } = rangeOf(request.query, clock.nowMs());
      const series = await clicks.series(link.domain, link.code, granularity, fromMs, toMs);
      return {
        domain: link.domain,
        code: link.code,
        granularity,
        from: new Date(fromMs).toISOString(),
        to: new Date(toMs).toISOString(),
        totals: {
          clicks: series.reduce((sum, point) => sum + point.clicks, 0),
          botClicks: series.reduce((sum, point) => sum + point.botClicks, 0),
        },
        series: series.map((point) => ({ ...point, bucketStart: point.bucketStart.toISOString() })),
        topReferrers: await clicks.topReferrers(link.domain, link.code, fromMs, toMs, TOP_REFERRERS),
      };
    },
  );

  app.get<{ Params: Params; Querystring: { format: "png" | "svg"; size: number } }>(
    "/v1/links/:domain/:code/qr",
    {
      schema: {
        summary: "The short URL as a QR code, PNG or SVG",
        tags,
        security: bearerSecurity,
        errorCodes: ["LINK_NOT_FOUND"],
        params: linkParams,
        querystring: {
          type: "object",
          additionalProperties: false,
          properties: {
            format: { type: "string", enum: ["png", "svg"], default: "svg" },
            size: { type: "integer", minimum: 64, maximum: 2_048, default: 256 },
          },
        },
        response: {
          200: {
            description: "The QR code image",
            content: {
              "image/png": { schema: { type: "string", format: "binary" } },
              "image/svg+xml": { schema: { type: "string" } },
            },
          },
        },
      },
    },
    async (request, reply) => {
      const link = await ownedLink(request, request.params);
      const { shortUrl } = toLinkJson(link, domains);
      const { format, size } = request.query;
      const qr = { errorCorrectionLevel: "M", margin: 2, width: size } as const;
      if (format === "png")
        return reply.type("image/png").send(await QRCode.toBuffer(shortUrl, { ...qr, type: "png" }));
      return reply.type("image/svg+xml").send(await QRCode.toString(shortUrl, { ...qr, type: "svg" }));
    },
  );
}

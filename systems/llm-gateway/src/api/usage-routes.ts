/**
 * The usage API: what a tenant used and what it cost, per logical model and the deployment
 * that answered, over a time range (`from` inclusive, `to` exclusive; the last 30 days by
 * default) — the tenant with its own key at `GET /v1/usage`, the operator for any tenant at
 * `GET /v1/admin/tenants/{id}/usage`. Costs in US dollars from the price table at the time
 * of each request, the provider's cached prompt tokens at their own price.
 *
 * @example
 * curl -H 'Authorization: Bearer llm_…' 'localhost:8111/v1/usage?from=2026-01-01T00:00:00Z'
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Clock } from "@casebook/kit/clock";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyInstance } from "fastify";
import { usdOf } from "../domain/pricing.ts";
import type { UsageLedger } from "../store/usage-writer.ts";

const DEFAULT_RANGE_MS = 30 * 86_400_000;
const MAX_RANGE_MS = 366 * 86_400_000;

export const usageQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    from: {
      type: "string",
      format: "date-time",
      description: "Start (inclusive); default 30 days before `to`",
    },
    to: { type: "string", format: "date-time", description: "End (exclusive); default now" },
  },
} as const;

const usageView = {
  type: "object",
  required: ["tenant", "from", "to", "totalCostUsd", "models"],
  properties: {
    tenant: { type: "string" },
    from: { type: "string" },
    to: { type: "string" },
    totalCostUsd: { type: "number" },
    models: {
      type: "array",
      items: {
        type: "object",
        properties: {
          model: { type: "string" },
          servedBy: { type: ["string", "null"] },
          requests: { type: "integer" },
          cacheHits: { type: "integer" },
          fallbacks: { type: "integer" },
          promptTokens: { type: "integer" },
          cachedPromptTokens: { type: "integer" },
          completionTokens: { type: "integer" },
          costUsd: { type: "number" },
        },
      },
    },
  },
} as const;

function rangeOf(query: { from?: string; to?: string }, clock: Clock): { fromMs: number; toMs: number } {
  const toMs = query.to === undefined ? clock.nowMs() + 1 : Date.parse(query.to);
  const fromMs = query.from === undefined ? toMs - DEFAULT_RANGE_MS : Date.parse(query.from);
  if (!(fromMs < toMs) || toMs - fromMs > MAX_RANGE_MS) {
    throw commonErrors.create("REQUEST_INVALID", {
      fields: {
        errors: [{ field: "/querystring/from", message: "must be before `to`, at most 366 days apart" }],
      },
    });
  }
  return { fromMs, toMs };
}

async function usageOf(
  usage: UsageLedger,
  clock: Clock,
  tenant: string,
  query: { from?: string; to?: string },
) {
  const range = rangeOf(query, clock);
  const rows = await usage.summary(tenant, range);
  return {
    tenant,
    from: new Date(range.fromMs).toISOString(),
    to: new Date(range.toMs).toISOString(),
    totalCostUsd: usdOf(rows.reduce((sum, r) => sum + r.costNanoUsd, 0)),
    models: rows.map(({ costNanoUsd, ...row }) => ({ ...row, costUsd: usdOf(costNanoUsd) })),
  };
}

/** `GET /v1/usage` in the tenants' scope. */
export function registerUsageRoutes(
  scope: FastifyInstance,
  options: { usage: UsageLedger; clock: Clock; tenantIdOf: (request: unknown) => string },
): void {
  scope.get<{ Querystring: { from?: string; to?: string } }>(
    "/v1/usage",
    {
      schema: {
        summary: "Your usage and cost per model over a time range",
        tags: ["usage"],
        security: bearerSecurity,
        querystring: usageQuery,
        response: { 200: usageView },
      },
    },
    async (request) => usageOf(options.usage, options.clock, options.tenantIdOf(request), request.query),
  );
}

/** `GET /v1/admin/tenants/{id}/usage` in the admin scope. */
export function registerAdminUsageRoute(
  scope: FastifyInstance,
  options: { usage: UsageLedger; clock: Clock },
): void {
  scope.get<{ Params: { id: string }; Querystring: { from?: string; to?: string } }>(
    "/v1/admin/tenants/:id/usage",
    {
      schema: {
        summary: "A tenant's usage and cost per model over a time range",
        tags: ["admin"],
        security: bearerSecurity,
        params: {
          type: "object",
          required: ["id"],
          properties: { id: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$" } },
        },
        querystring: usageQuery,
        response: { 200: usageView },
      },
    },
    async (request) => usageOf(options.usage, options.clock, request.params.id, request.query),
  );
}

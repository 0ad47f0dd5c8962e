/**
 * POST /v1/check — "may this request spend `cost` now?" The answer is a decision
 * (200) whatever it is: allowed, limited or unavailable (a fail-closed policy with
 * the store down), with the headers the caller should send its own client
 * (RL-15: Retry-After, RateLimit-Policy/RateLimit, X-RateLimit-*).
 *
 * A check naming a policy that is not in force is a 400 listing those in force: checking
 * nothing would admit the request with no limit applied (a typo would switch a limit off).
 * A policy the request lacks a descriptor for is reported in `skipped`.
 */
import { randomUUID } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { type Descriptor, descriptor } from "../domain/descriptors.ts";
import type { CheckResult, Limiter } from "../domain/limiter.ts";
import { unknownPolicyNames } from "../domain/policy.ts";
import { rateLimitHeaders } from "../domain/rate-limit-headers.ts";
import { rateLimitErrors } from "../errors.ts";
import type { LimiterMetrics } from "../metrics.ts";
import { checkBody, checkResponse } from "./check-schema.ts";

interface CheckRequestBody {
  descriptors: Partial<Record<string, string>>;
  cost?: number;
  policies?: string[];
}

/** The decision as response headers: what a 429/503 (or a pass) should carry. */
export function headersOf(result: CheckResult): Record<string, string> {
  if (result.outcome === "unavailable")
    return rateLimitHeaders({ outcome: "unavailable", retryAfterMs: result.retryAfterMs });
  return rateLimitHeaders({
    outcome: result.outcome,
    limits: result.limits,
    retryAfterMs: result.retryAfterMs || undefined,
  });
}

export function registerCheckRoute(app: FastifyInstance, limiter: Limiter, metrics: LimiterMetrics): void {
  app.post<{ Body: CheckRequestBody }>(
    "/v1/check",
    {
      schema: {
        summary: "Decide whether a request may spend `cost` now",
        tags: ["rate limit"],
        body: checkBody,
        errorCodes: ["RATELIMIT_COST_TOO_HIGH", "RATELIMIT_OVERLOADED"],
        response: { 200: checkResponse },
      },
    },
    async (request) => {
      const started = performance.now();
      const named = request.body.policies;
      const unknown = named === undefined ? [] : unknownPolicyNames(limiter.config, named);
      if (unknown.length > 0) {
        const inForce = limiter.config.policies.map((policy) => policy.name);
        throw rateLimitErrors.create("RATELIMIT_POLICY_UNKNOWN", {
          detail: `policies: ${unknown.join(", ")} not in force; the policies in force are ${inForce.join(", ") || "none"}.`,
          fields: { unknown, policies: inForce },
        });
      }
      const d: Descriptor = descriptor(request.body.descriptors);
      const result = await limiter.check({
        descriptor: d,
        requestId: `${request.id}:${randomUUID()}`,
        cost: request.body.cost,
        policies: request.body.policies,
      });
      metrics.observe(result, (performance.now() - started) / 1000);
      for (const limit of result.limits) {
        if (limit.shadowRefused)
          request.log.info({ policy: limit.policy }, "shadow limit would have refused");
      }
      return {
        allowed: result.outcome === "allowed",
        outcome: result.outcome,
        remaining: Number.isFinite(result.remaining) ? result.remaining : null,
        resetMs: result.resetMs,
        retryAfterMs: result.retryAfterMs,
        delayMs: result.delayMs,
        degraded: result.degraded,
        failMode: result.failMode,
        headers: headersOf(result),
        limits: result.limits.map(({ key: _key, refused: _refused, ...rest }) => rest),
        skipped: result.skipped,
      };
    },
  );
}

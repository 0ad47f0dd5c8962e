/**
 * The rate limiter's HTTP API on a Fastify instance, wired the one way main.ts and the tests
 * both use: `POST /v1/check` and `GET /v1/policies` in a scope behind the bearer token(s) when
 * any are set (realm "rate-limiter"); /healthz, /readyz and /metrics, registered by the
 * service base outside this scope, stay open to probes.
 *
 * @example
 * await registerRateLimiterApi(service.app, { limiter: rl.limiter, metrics, tokens: [] });
 */
import { createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance } from "fastify";
import type { Limiter } from "../domain/limiter.ts";
import type { LimiterMetrics } from "../metrics.ts";
import { registerCheckRoute } from "./check-route.ts";
import { registerPoliciesRoute } from "./policies-route.ts";

export interface RateLimiterApiOptions {
  limiter: Limiter;
  metrics: LimiterMetrics;
  /** RATE_LIMITER_TOKEN split on commas; empty: no auth (main allows that only on loopback). */
  tokens: readonly string[];
}

export async function registerRateLimiterApi(
  app: FastifyInstance,
  options: RateLimiterApiOptions,
): Promise<void> {
  const { limiter, metrics, tokens } = options;
  await app.register(async (scope) => {
    if (tokens.length > 0)
      scope.addHook("onRequest", createStaticTokenAuth({ realm: "rate-limiter", token: [...tokens] }));
    registerCheckRoute(scope, limiter, metrics);
    registerPoliciesRoute(scope, limiter);
  });
}

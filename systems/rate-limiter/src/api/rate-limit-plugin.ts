/**
 * The middleware: a Fastify plugin that limits a service's own routes with the same
 * Limiter (library use, no extra hop). Limited → 429 problem+json with Retry-After
 * and the RateLimit headers (RL-15); a fail-closed policy with the store down →
 * 503 with Retry-After (RL-12); a shaper's delay is waited out before the handler.
 *
 * @example
 * const rl = await createRateLimiter({ policies, redisUrl });
 * await app.register(rateLimitPlugin, { limiter: rl.limiter, describe: (req) => ({ ip: req.ip, route: req.routeOptions.url }) });
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type DescriptorKey, descriptor } from "../domain/descriptors.ts";
import type { Limiter } from "../domain/limiter.ts";
import { rateLimitErrors } from "../errors.ts";
import type { LimiterMetrics } from "../metrics.ts";
import { headersOf } from "./check-route.ts";

export interface RateLimitPluginOptions {
  readonly limiter: Limiter;
  /** The request's descriptors (ip, apiKey, plan, user, route, method). */
  readonly describe: (request: FastifyRequest) => Partial<Record<DescriptorKey, string | undefined>>;
  /** Routes left alone (health checks, metrics). Default: /healthz, /readyz, /metrics. */
  readonly skip?: (request: FastifyRequest) => boolean;
  /** Decision metrics (see createLimiterMetrics); without them only `onStoreError` reports trouble. */
  readonly metrics?: LimiterMetrics;
  /** Longest shaping delay the plugin will wait; beyond it the request is limited. Default 5 000. */
  readonly maxDelayMs?: number;
}

const OPS_PATHS = new Set(["/healthz", "/readyz", "/metrics", "/openapi.json"]);

export async function rateLimitPlugin(app: FastifyInstance, options: RateLimitPluginOptions): Promise<void> {
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  const skip = options.skip ?? ((request: FastifyRequest) => OPS_PATHS.has(request.url.split("?")[0]!));
  app.addHook("onRequest", async (request, reply) => {
    if (skip(request)) return;
    const started = performance.now();
    const result = await options.limiter.check({
      descriptor: descriptor(options.describe(request)),
      requestId: `${request.id}:${randomUUID()}`,
    });
    options.metrics?.observe(result, (performance.now() - started) / 1000);
    reply.headers(headersOf(result));
    if (result.outcome === "unavailable") {
      throw rateLimitErrors.create("RATELIMIT_UNAVAILABLE", {
        fields: { retryAfterMs: result.retryAfterMs },
      });
    }
    if (result.outcome === "limited" || result.delayMs > maxDelayMs) {
      const retryAfterMs = result.retryAfterMs || result.delayMs;
      throw rateLimitErrors.create("RATELIMIT_EXCEEDED", {
        fields: { retryAfterMs, policies: result.limits.filter((l) => l.refused).map((l) => l.policy) },
      });
    }
    if (result.delayMs > 0) await sleep(result.delayMs);
  });
}
// Fastify applies hooks of a plugin to the routes around it only when the plugin is not encapsulated.
(rateLimitPlugin as unknown as Record<symbol, boolean>)[Symbol.for("skip-override")] = true;

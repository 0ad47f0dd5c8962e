/**
 * The rate limiter as a library, for a Node service that limits its own routes with no
 * extra hop (the package's `./library` export): the limiter's factory, the policy file's
 * parser, the Fastify plugin and the descriptor builder — the four names the README's
 * "As a library" section uses, and nothing of the service around them.
 *
 * @example
 * import { createRateLimiter, parsePolicyConfig, rateLimitPlugin } from "@casebook/rate-limiter/library";
 * const rl = await createRateLimiter({ policies: parsePolicyConfig(config), redisUrl: process.env.REDIS_URL });
 * await app.register(rateLimitPlugin, { limiter: rl.limiter, describe: (req) => ({ ip: req.ip }) });
 */
export { type RateLimitPluginOptions, rateLimitPlugin } from "./api/rate-limit-plugin.ts";
export { createRateLimiter, type RateLimiter, type RateLimiterOptions } from "./create-rate-limiter.ts";
export { type Descriptor, descriptor } from "./domain/descriptors.ts";
export { type PolicyConfig, parsePolicyConfig } from "./domain/policy-config.ts";

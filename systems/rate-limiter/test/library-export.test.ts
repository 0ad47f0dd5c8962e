/**
 * The README's "As a library" example, through the package's `./library` export exactly as
 * another service imports it (by package name, not a relative path): a plain Fastify app with
 * Fastify's own error handler limits its route, answering 429 with Retry-After and the
 * RateLimit headers once the policy's capacity is spent (RL-15), and its health route is left
 * alone. The in-process engine, so no Redis is needed.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createRateLimiter, parsePolicyConfig, rateLimitPlugin } from "@casebook/rate-limiter/library";
import Fastify from "fastify";

test("RL-15 the library export limits a plain Fastify app's routes: 429 with Retry-After past the capacity, /healthz untouched", async (t) => {
  const rl = await createRateLimiter({
    policies: parsePolicyConfig({
      policies: [
        { name: "per-ip", key: "ip:{ip}", limit: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 } },
      ],
    }),
  });
  const app = Fastify();
  t.after(async () => {
    await app.close();
    await rl.close();
  });
  await app.register(rateLimitPlugin, {
    limiter: rl.limiter,
    describe: (req) => ({ ip: req.ip, route: req.routeOptions.url, method: req.method }),
  });
  app.get("/hello", async () => ({ hello: "world" }));
  app.get("/healthz", async () => ({ ok: true }));

  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) statuses.push((await app.inject({ method: "GET", url: "/hello" })).statusCode);
  assert.deepEqual(statuses, [200, 200, 200, 429]);
  const limited = await app.inject({ method: "GET", url: "/hello" });
  assert.equal(limited.statusCode, 429);
  assert.ok(Number(limited.headers["retry-after"]) > 0, "Retry-After in seconds");
  assert.equal(limited.headers["x-ratelimit-limit"], "3");
  assert.equal(limited.headers["x-ratelimit-remaining"], "0");
  assert.match(limited.body, /RATELIMIT_EXCEEDED/);
  for (let i = 0; i < 5; i++)
    assert.equal((await app.inject({ method: "GET", url: "/healthz" })).statusCode, 200);
});

/**
 * The service's edge: credentials (RATE_LIMITER_TOKEN, no unauthenticated API beyond
 * loopback) and what an operator reads when Redis is down at start (one plain warning,
 * /readyz in plain words). No engine needed: the Redis here is a closed port.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { ConfigError } from "@casebook/kit/config";
import { main } from "../src/main.ts";
import { startServiceProcesses } from "./service-processes.ts";

const TOKENS = ["checker-token-0123456789", "rotated-token-0123456789"];

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test("with RATE_LIMITER_TOKEN the check API and the policies need one of the tokens; probes stay open", async (t) => {
  const running = await main({ PORT: "0", RATE_LIMITER_TOKEN: TOKENS.join(","), LOG_LEVEL: "silent" });
  t.after(() => running.close());
  const check = (authorization?: string) =>
    fetch(`${running.url}/v1/check`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(authorization === undefined ? {} : { authorization }),
      },
      body: JSON.stringify({ descriptors: { ip: "192.0.2.7" } }),
    });
  const missing = await check();
  assert.equal(missing.status, 401);
  assert.equal(((await missing.json()) as { code: string }).code, "AUTH_MISSING");
  assert.equal(missing.headers.get("www-authenticate"), 'Bearer realm="rate-limiter"');
  const wrong = await check("Bearer not-the-token-0123456789");
  assert.equal(wrong.status, 401);
  assert.equal(((await wrong.json()) as { code: string }).code, "AUTH_INVALID");
  for (const token of TOKENS) assert.equal((await check(`Bearer ${token}`)).status, 200, token);
  assert.equal((await fetch(`${running.url}/v1/policies`)).status, 401);
  const policies = await fetch(`${running.url}/v1/policies`, {
    headers: { authorization: `Bearer ${TOKENS[1]}` },
  });
  assert.equal(policies.status, 200);
  for (const probe of ["/healthz", "/readyz", "/metrics"])
    assert.equal((await fetch(`${running.url}${probe}`)).status, 200, probe);
});

test("beyond loopback without RATE_LIMITER_TOKEN the service refuses to start, in one line naming the setting", async () => {
  await assert.rejects(main({ HOST: "0.0.0.0", PORT: "0", LOG_LEVEL: "silent" }), (error) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.problems.length, 1);
    assert.equal(error.problems[0]?.env, "RATE_LIMITER_TOKEN");
    assert.match(
      error.problems[0]?.message ?? "",
      /^HOST=0\.0\.0\.0 listens beyond loopback without credentials: set RATE_LIMITER_TOKEN to /,
    );
    return true;
  });
  // A token nobody could mistake for one: too short, or carrying a space.
  for (const token of ["short", "has a space in it 0123456789"])
    await assert.rejects(main({ PORT: "0", RATE_LIMITER_TOKEN: token, LOG_LEVEL: "silent" }), (error) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.problems[0]?.env, "RATE_LIMITER_TOKEN");
      assert.doesNotMatch(error.message, new RegExp(token), "the secret is not echoed");
      return true;
    });
});

test("Redis unreachable at start: one plain warning line, and /readyz says where and why", async (t) => {
  const port = await closedPort();
  const services = await startServiceProcesses({
    count: 1,
    policies: {
      policies: [
        { name: "per-ip", key: "ip:{ip}", limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 1 } },
      ],
    },
    env: { REDIS_URL: `redis://127.0.0.1:${port}` },
  });
  t.after(() => services.stop());
  const instance = services.instances[0]!;
  const where = `redis at 127.0.0.1:${port} not reachable: connection refused`;
  const warnings = instance.logs().filter((line) => line.level === "warn" || line.level === 40);
  assert.equal(warnings.length, 1, JSON.stringify(warnings));
  assert.equal(
    warnings[0]!.msg,
    `${where}; starting anyway: each policy's failMode decides until Redis answers`,
  );
  assert.equal(warnings[0]!.err, undefined, "no stack, no ioredis object");
  const ready = await fetch(`${instance.url}/readyz`);
  assert.equal(ready.status, 503);
  const report = (await ready.json()) as { checks: { redis: { error: string } } };
  assert.equal(report.checks.redis.error, where);
});

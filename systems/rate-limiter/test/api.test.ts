/**
 * The HTTP API and the middleware on the embedded engine (in-process store):
 * decisions, headers (RL-15), layers (RL-16), validation at the edge, hot reload.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createService } from "@casebook/infra/http/service";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { rateLimitPlugin } from "../src/api/rate-limit-plugin.ts";
import { registerRateLimiterApi } from "../src/api/register-api.ts";
import { createRateLimiter, type RateLimiter } from "../src/create-rate-limiter.ts";
import { descriptor } from "../src/domain/descriptors.ts";
import { parsePolicyConfig } from "../src/domain/policy.ts";
import { rateLimitErrors } from "../src/errors.ts";
import { main } from "../src/main.ts";
import { createLimiterMetrics } from "../src/metrics.ts";

const layered = parsePolicyConfig({
  policies: [
    { name: "per-ip", key: "ip:{ip}", limit: { algorithm: "token-bucket", capacity: 20, ratePerS: 0.01 } },
    {
      name: "plan-free",
      match: { plan: "free" },
      key: "key:{apiKey}",
      limit: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
    },
    {
      name: "user-payments",
      match: { route: "/v1/payments*" },
      key: "user:{user}:route:{route}",
      limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 },
      failMode: "closed",
    },
    {
      name: "observe-users",
      key: "user:{user}",
      shadow: true,
      limit: { algorithm: "token-bucket", capacity: 1, ratePerS: 0.01 },
    },
  ],
});

let rl: RateLimiter;
const clock = new ManualClock(1_700_000_000_000);
const service = createService({
  name: "rate-limiter",
  version: "test",
  log: { level: "silent" },
  errors: [rateLimitErrors],
});
const app = createService({
  name: "demo-app",
  version: "test",
  log: { level: "silent" },
  errors: [rateLimitErrors],
});

before(async () => {
  rl = await createRateLimiter({ policies: layered, clock });
  const metrics = createLimiterMetrics(service.registry, rl.limiter, rl.breaker);
  await registerRateLimiterApi(service.app, { limiter: rl.limiter, metrics, tokens: [] });
  await app.app.register(rateLimitPlugin, {
    limiter: rl.limiter,
    describe: (request) => ({
      ip: request.ip,
      user: String(request.headers["x-user"] ?? "anonymous"),
      route: request.routeOptions.url,
    }),
  });
  app.app.post("/v1/payments", async () => ({ paid: true }));
  await app.app.ready();
});

after(async () => {
  await Promise.all([service.close(), app.close(), rl.close()]);
});

const check = (descriptors: Record<string, string>, extra: Record<string, unknown> = {}) =>
  service.app.inject({ method: "POST", url: "/v1/check", payload: { descriptors, ...extra } });

test("RL-15 a limited request gets 429 with Retry-After in seconds and the limit/remaining/reset headers", async () => {
  const pay = () => app.app.inject({ method: "POST", url: "/v1/payments", headers: { "x-user": "u-429" } });
  for (let i = 0; i < 5; i++) assert.equal((await pay()).statusCode, 200);
  const limited = await pay();
  assert.equal(limited.statusCode, 429);
  assert.match(String(limited.headers["content-type"]), /application\/problem\+json/);
  assert.equal(limited.json().code, "RATELIMIT_EXCEEDED");
  assert.equal(limited.headers["retry-after"], "2", "ceil(2000 ms) in seconds");
  assert.equal(limited.headers["x-ratelimit-limit"], "5");
  assert.equal(limited.headers["x-ratelimit-remaining"], "0");
  assert.ok(Number(limited.headers["x-ratelimit-reset"]) > 0);
  assert.match(String(limited.headers["ratelimit-policy"]), /"user-payments";q=5;w=10/);
  assert.match(String(limited.headers.ratelimit), /"user-payments";r=0;t=2/);
  clock.advance(2_000);
  assert.equal((await pay()).statusCode, 200, "one token back after 2 s (RL-02)");
});

test("RL-16 three layers at once: each refuses what it identifies best", async () => {
  // The bot: one IP, many users → per-ip refuses it.
  let botRefusals = 0;
  for (let i = 0; i < 25; i++) {
    const body = (await check({ ip: "198.51.100.7", user: `bot-${i}` })).json();
    if (!body.allowed) {
      botRefusals++;
      assert.deepEqual(
        body.limits.filter((l: { allowed: boolean }) => !l.allowed).map((l: { policy: string }) => l.policy),
        ["per-ip"],
      );
    }
  }
  assert.equal(botRefusals, 5);
  // The partner over its plan: many IPs, one key → plan-free refuses it.
  const partner = [];
  for (let i = 0; i < 5; i++)
    partner.push((await check({ ip: `203.0.113.${i}`, apiKey: "k-partner", plan: "free" })).json());
  assert.deepEqual(
    partner.map((b) => b.allowed),
    [true, true, true, false, false],
  );
  assert.equal(partner[3].limits.find((l: { policy: string }) => l.policy === "plan-free").allowed, false);
  // The user bursting on payments: fine IP, fine plan → user-payments refuses.
  const burst = [];
  for (let i = 0; i < 6; i++)
    burst.push((await check({ ip: `192.0.2.${i}`, user: "u-burst", route: "/v1/payments" })).json());
  assert.equal(burst[5].allowed, false);
  assert.equal(burst[5].limits.find((l: { policy: string }) => l.policy === "user-payments").allowed, false);
});

test("shadow policies count and report but never refuse", async () => {
  const first = (await check({ ip: "192.0.2.50", user: "shadowed" })).json();
  const second = (await check({ ip: "192.0.2.50", user: "shadowed" })).json();
  assert.equal(first.allowed, true);
  assert.equal(second.allowed, true);
  const shadow = second.limits.find((l: { policy: string }) => l.policy === "observe-users");
  assert.equal(shadow.shadowRefused, true);
  const metrics = await service.app.inject({ url: "/metrics" });
  assert.match(
    metrics.body,
    /ratelimit_decisions_total\{policy="observe-users",outcome="shadow_limited"\} [1-9]/,
  );
});

test("a refusal by a later limit gives back what earlier limits spent (compensation)", async () => {
  // plan-free (fixed window 3) and per-ip (bucket 20) are in different slots: two groups.
  for (let i = 0; i < 3; i++)
    assert.ok((await check({ ip: "192.0.2.99", apiKey: "k-comp", plan: "free" })).json().allowed);
  for (let i = 0; i < 5; i++)
    assert.equal((await check({ ip: "192.0.2.99", apiKey: "k-comp", plan: "free" })).json().allowed, false);
  // 3 spent on per-ip by the allowed calls, the 5 refused ones refunded: 17 left.
  const ipOnly = (await check({ ip: "192.0.2.99" })).json();
  assert.equal(ipOnly.limits.find((l: { policy: string }) => l.policy === "per-ip").remaining, 16);
});

test("weighted cost and the policies filter", async () => {
  const heavy = (await check({ ip: "192.0.2.120" }, { cost: 15 })).json();
  assert.equal(heavy.remaining, 5);
  const only = (
    await check({ ip: "192.0.2.121", apiKey: "k-x", plan: "free" }, { policies: ["plan-free"] })
  ).json();
  assert.deepEqual(
    only.limits.map((l: { policy: string }) => l.policy),
    ["plan-free"],
  );
});

test("bad input is a 400 naming the field, and spends nothing", async () => {
  for (const payload of [
    { descriptors: { ipx: "1" } },
    { descriptors: {} },
    { descriptors: { ip: "1" }, cost: 0 },
    { descriptors: { ip: "1" }, cost: 1.5 },
  ]) {
    const response = await service.app.inject({ method: "POST", url: "/v1/check", payload });
    assert.equal(response.statusCode, 400, JSON.stringify(payload));
    assert.equal(response.json().code, "REQUEST_INVALID");
    assert.ok(response.json().errors[0].field.startsWith("/body"));
  }
  const untouched = (await check({ ip: "1" })).json();
  assert.equal(untouched.limits[0].remaining, 19);
});

test("GET /v1/policies lists the policies in force", async () => {
  const body = (await service.app.inject({ url: "/v1/policies" })).json();
  assert.deepEqual(
    body.policies.map((p: { name: string }) => p.name),
    ["per-ip", "plan-free", "user-payments", "observe-users"],
  );
  assert.equal(body.policies[2].failMode, "closed");
  assert.equal(body.policies[1].match.plan, "free");
  // The response schema serializes the body: every field of a policy, each algorithm's parameters too, survives.
  assert.deepEqual(body.policies[1], {
    name: "plan-free",
    match: { plan: "free" },
    key: "key:{apiKey}",
    hashTag: null,
    limit: { algorithm: "fixed-window", limit: 3, windowMs: 60_000 },
    failMode: "open",
    shadow: false,
    cost: { default: 1, routes: {} },
    subBuckets: 1,
  });
  assert.deepEqual(body.policies[0].limit, { algorithm: "token-bucket", capacity: 20, ratePerS: 0.01 });
  assert.equal(body.policies[3].shadow, true);
  assert.equal(body.domain, rl.limiter.config.domain);
});

test("the service hot-reloads its policy file and refuses an invalid one, keeping the policies in force", async () => {
  const dir = await mkdtemp(join(tmpdir(), "rl-policies-"));
  const file = join(dir, "policies.json");
  const policy = (capacity: number) =>
    JSON.stringify({
      policies: [{ name: "p", key: "ip:{ip}", limit: { algorithm: "token-bucket", capacity, ratePerS: 1 } }],
    });
  await writeFile(file, policy(2));
  const running = await main({ PORT: "0", RATE_LIMITER_POLICIES: file, LOG_LEVEL: "silent" });
  try {
    const capacityNow = async () => {
      const response = await fetch(`${running.url}/v1/policies`);
      const body = (await response.json()) as { policies: { limit: { capacity: number } }[] };
      return body.policies[0]!.limit.capacity;
    };
    assert.equal(await capacityNow(), 2);
    await writeFile(file, "{ not json");
    await writeFile(file, policy(0)); // invalid: capacity must be ≥ 1
    await writeFile(file, policy(7));
    const deadline = Date.now() + 10_000;
    while ((await capacityNow()) !== 7 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(await capacityNow(), 7);
    await writeFile(file, policy(0));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await capacityNow(), 7, "an invalid file never replaces valid policies");
  } finally {
    await running.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("a cost no bucket could ever hold is a 400 naming the policy, and spends nothing", async () => {
  const response = await check({ ip: "192.0.2.130" }, { cost: 21 });
  assert.equal(response.statusCode, 400);
  assert.equal(response.json().code, "RATELIMIT_COST_TOO_HIGH");
  assert.equal(response.json().policy, "per-ip");
  assert.equal(rl.breaker.state, "closed", "a caller's mistake never counts as a store failure");
  assert.equal((await check({ ip: "192.0.2.130" })).json().limits[0].remaining, 19);
});

test("a check naming a policy not in force is a 400 listing the policies in force, and spends nothing", async () => {
  const response = await check({ ip: "192.0.2.140" }, { policies: ["per-ip", "per-ipp"] });
  assert.equal(response.statusCode, 400);
  assert.match(response.headers["content-type"] as string, /^application\/problem\+json/);
  const problem = response.json();
  assert.equal(problem.code, "RATELIMIT_POLICY_UNKNOWN");
  assert.deepEqual(problem.unknown, ["per-ipp"]);
  assert.deepEqual(problem.policies, ["per-ip", "plan-free", "user-payments", "observe-users"]);
  assert.match(problem.detail, /per-ipp/);
  assert.equal((await check({ ip: "192.0.2.140" })).json().limits[0].remaining, 19, "nothing spent");
});

test("a policy the request lacks a descriptor for is reported in `skipped`, with what is missing", async () => {
  // per-ip applies; user-payments matches the route but has no user; observe-users has no user;
  // plan-free's match refuses plan=pro, so it does not apply and is not a skip.
  const answer = (await check({ ip: "192.0.2.141", plan: "pro", route: "/v1/payments" })).json();
  assert.deepEqual(
    answer.limits.map((l: { policy: string }) => l.policy),
    ["per-ip"],
  );
  assert.deepEqual(answer.skipped, [
    { policy: "user-payments", reason: "descriptor-missing", missing: ["user"] },
    { policy: "observe-users", reason: "descriptor-missing", missing: ["user"] },
  ]);
  // Naming the policy: the skip is the whole answer, instead of a silent "allowed".
  const named = (await check({ ip: "192.0.2.141" }, { policies: ["plan-free"] })).json();
  assert.equal(named.allowed, true);
  assert.deepEqual(named.limits, []);
  assert.deepEqual(named.skipped, [
    { policy: "plan-free", reason: "descriptor-missing", missing: ["plan", "apiKey"] },
  ]);
  const complete = (await check({ ip: "192.0.2.142", user: "u1", route: "/v1/payments" })).json();
  assert.deepEqual(complete.skipped, [
    { policy: "plan-free", reason: "descriptor-missing", missing: ["plan", "apiKey"] },
  ]);
});

test("RL-09 a hot key split in sub-buckets through the limiter: never over the quota, close to it", async () => {
  const split = await createRateLimiter({
    clock: new ManualClock(1_700_000_000_000),
    random: seededRandom("rl-09"),
    policies: parsePolicyConfig({
      policies: [
        {
          name: "hot-user",
          key: "user:{user}",
          subBuckets: 4,
          limit: { algorithm: "token-bucket", capacity: 100, ratePerS: 0.001 },
        },
      ],
    }),
  });
  try {
    let allowed = 0;
    const keys = new Set<string>();
    for (let i = 0; i < 150; i++) {
      const result = await split.limiter.check({
        descriptor: descriptor({ user: "whale" }),
        requestId: `w${i}`,
      });
      if (result.outcome === "allowed") allowed++;
      for (const limit of result.limits) keys.add(limit.key);
    }
    assert.equal(keys.size, 4, "four sub-buckets, one picked per request");
    assert.ok(allowed <= 100, `allowed ${allowed} ≤ the quota`);
    assert.ok(allowed >= 80, `allowed ${allowed}: a quota-sized burst falls short by a bounded amount`);
  } finally {
    await split.close();
  }
});

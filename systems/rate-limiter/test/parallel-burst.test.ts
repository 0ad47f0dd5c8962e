/**
 * "Never more than" under real concurrency: THREE service processes (src/main.ts)
 * share the real Redis, each with its own connection, and requests are spread over
 * them round-robin. Whatever the interleaving, the Lua script decides each request
 * atomically on Redis, so the instances together admit exactly what one bucket holds.
 *
 * Both policies fail CLOSED: a Redis hiccup then shows as "unavailable" (and fails
 * the test) instead of being silently admitted by the local fallback, which would
 * make the counts prove nothing about Redis.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { runClosedLoop } from "@casebook/lab/load-generator";
import { requireRedis, suiteEngine, uniqueName } from "@casebook/lab/test-engines";
import { type CheckAnswer, type ServiceProcesses, startServiceProcesses } from "./service-processes.ts";
import { deleteKeys } from "./store-backends.ts";

const INSTANCES = 3;
/** RL-04's bucket: capacity 5, refill so slow (1 token per 1 000 s) it cannot add one during the test. */
const BURST = { capacity: 5, ratePerS: 0.001 };
/** RL-17's bucket: refills fast enough that the run's elapsed time matters. */
const SUSTAINED = { capacity: 10, ratePerS: 20 };
/** RL-17's load: bounded in time and in workers. */
const LOAD_DURATION_MS = 2_000;
const LOAD_CONCURRENCY = 12;

const policies = {
  domain: "burst",
  policies: [
    {
      name: "burst",
      key: "user:{user}",
      limit: { algorithm: "token-bucket", ...BURST },
      failMode: "closed",
    },
    {
      name: "sustained",
      key: "user:{user}",
      limit: { algorithm: "token-bucket", ...SUSTAINED },
      failMode: "closed",
    },
  ],
};

describe("parallel burst against three service processes on real Redis", () => {
  let services: ServiceProcesses | undefined;
  const keyPrefix = `${uniqueName("rl-burst")}:`;

  // Hooks run even when every test skips: these run only when Redis is up.
  const redis = suiteEngine(requireRedis);

  redis.before(async (url) => {
    services = await startServiceProcesses({
      count: INSTANCES,
      policies,
      env: {
        REDIS_URL: url,
        RATE_LIMITER_KEY_PREFIX: keyPrefix,
        // Generous: on a loaded machine a 20 ms timeout would turn into "unavailable", not into a
        // wrong count; these tests are about atomicity, the fault tests cover timeouts.
        RATE_LIMITER_TIMEOUT_MS: "1000",
      },
    });
  });

  redis.after(async (url) => {
    await services?.stop();
    await deleteKeys(url, keyPrefix);
  });

  test("RL-04 60 calls in parallel, 30 at a time, over 3 instances on a fresh bucket of 5 allow exactly 5", async (t) => {
    if (!redis.use(t) || !services) return;
    const instances = services.instances;
    const user = uniqueName("u");
    const answers: CheckAnswer[] = [];
    const report = await runClosedLoop({
      count: 60,
      concurrency: 30,
      requestTimeoutMs: 5_000,
      task: async ({ index }) => {
        const instance = instances[index % instances.length]!;
        answers.push(await instance.check({ descriptors: { user }, policies: ["burst"] }));
      },
    });
    assert.equal(report.errors, 0);
    assert.equal(answers.length, 60);
    assert.deepEqual(
      answers.filter((a) => a.outcome === "unavailable" || a.degraded),
      [],
      "every decision came from Redis",
    );
    const allowed = answers.filter((a) => a.allowed);
    const limited = answers.filter((a) => a.outcome === "limited");
    assert.equal(allowed.length, 5);
    assert.equal(limited.length, 55);
    // Each admitted call took a distinct token: the five saw remaining 4,3,2,1,0 in some order.
    assert.deepEqual(
      allowed.map((a) => a.remaining ?? -1).sort((a, b) => a - b),
      [0, 1, 2, 3, 4],
    );
    for (const refused of limited) {
      assert.ok(refused.retryAfterMs > 0, `retryAfterMs ${refused.retryAfterMs}`);
      assert.ok(Number(refused.headers["Retry-After"]) >= 1);
    }
  });

  test("RL-17 bounded concurrent load on 3 instances: allowed ≤ capacity + refill × elapsed", async (t) => {
    if (!redis.use(t) || !services) return;
    const instances = services.instances;
    const user = uniqueName("u");
    const perInstance = instances.map(() => 0);
    let allowed = 0;
    let refused = 0;
    let fromFallback = 0;
    // Elapsed spans every decision: from before the first request leaves to after the last answer.
    const startedMs = performance.now();
    const report = await runClosedLoop({
      durationMs: LOAD_DURATION_MS,
      concurrency: LOAD_CONCURRENCY,
      requestTimeoutMs: 5_000,
      task: async ({ index }) => {
        const at = index % instances.length;
        const answer = await instances[at]!.check({ descriptors: { user }, policies: ["sustained"] });
        perInstance[at]!++;
        if (answer.degraded || answer.outcome === "unavailable") fromFallback++;
        else if (answer.allowed) allowed++;
        else refused++;
      },
    });
    const elapsedMs = performance.now() - startedMs;
    assert.equal(report.errors, 0);
    assert.equal(fromFallback, 0, "every decision came from Redis");
    // Redis TIME is read in whole ms (floor) on the wall clock, elapsed here on the monotonic one:
    // allow 2 ms for the rounding and for NTP slewing between the two clocks.
    const bound = SUSTAINED.capacity + (SUSTAINED.ratePerS * (elapsedMs + 2)) / 1_000;
    const detail = `allowed ${allowed}, refused ${refused}, elapsed ${elapsedMs.toFixed(0)} ms, bound ${bound.toFixed(2)}`;
    t.diagnostic(`${detail}, ${report.count} requests`);
    assert.ok(allowed <= bound, detail);
    // Not vacuous: the load outran the bucket (refusals), and refill was credited beyond the burst.
    assert.ok(refused > 0, detail);
    assert.ok(allowed > SUSTAINED.capacity, detail);
    for (const count of perInstance) assert.ok(count > 0, `each instance served: ${perInstance.join(", ")}`);
  });
});

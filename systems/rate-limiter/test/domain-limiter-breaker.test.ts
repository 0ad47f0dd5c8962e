/**
 * The breaker counts Redis failing, not one stall's casualties: the checks in flight when
 * the store fails all fail together and count as ONE failure; only checks sent after a
 * failure was seen, failing too, count as the next ones (issue 12: a burst caught by one
 * hiccup opened the breaker and sent everything to the fallback).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { descriptor } from "../src/domain/descriptors.ts";
import { Limiter } from "../src/domain/limiter.ts";
import { LocalLimiter } from "../src/domain/local-limiter.ts";
import { parsePolicyConfig } from "../src/domain/policy.ts";
import type { LimiterStore } from "../src/domain/store-port.ts";
import { randomPicker } from "../src/domain/sub-buckets.ts";

test("RL-13 the checks in flight when Redis stalls count as one breaker failure; failures in a row open it", async () => {
  const clock = new ManualClock(1_700_000_000_000);
  let spends = 0;
  const store: LimiterStore = {
    engine: "redis",
    spend: async () => {
      spends++;
      await Promise.resolve();
      throw redisErrors.create("REDIS_TIMEOUT", { detail: "no reply" });
    },
    refund: async () => {},
    ping: async () => {},
    close: async () => {},
  };
  const breaker = new CircuitBreaker({ name: "t", clock, failureThreshold: 3, openDurationMs: 1_000 });
  const limiter = new Limiter(
    parsePolicyConfig({
      domain: "t",
      policies: [
        { name: "p", key: "user:{user}", limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 1 } },
      ],
    }),
    {
      store,
      breaker,
      local: new LocalLimiter({ clock, maxKeys: 10, instances: 1 }),
      picker: randomPicker(seededRandom(1)),
      unavailableRetryMs: 1_000,
    },
  );
  let sequence = 0;
  const check = () => limiter.check({ descriptor: descriptor({ user: "u" }), requestId: `r${++sequence}` });
  // One stall: 20 checks in flight fail together.
  const burst = await Promise.all(Array.from({ length: 20 }, check));
  assert.ok(burst.every((r) => r.degraded));
  assert.equal(breaker.state, "closed", "one stall is one failure, not 20");
  assert.equal(breaker.snapshot().consecutiveFailures, 1);
  // Sent after the failure was seen, and failing again: the next ones in a row.
  await check();
  await check();
  assert.equal(breaker.state, "open", "three failures in a row");
  const before = spends;
  assert.equal((await check()).degraded, true);
  assert.equal(spends, before, "open: no store call");
});

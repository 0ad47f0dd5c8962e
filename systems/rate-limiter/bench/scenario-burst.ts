/**
 * Scenario "burst" (issue 12): N checks of ONE key fired at once at one limiter process
 * (the library as createRateLimiter ships it: default timeout, in-flight bound, breaker),
 * N = 50 … 3 000, on fail-open policies of 100 per hour — where a spurious fallback would
 * show as admissions beyond the limit. Prints, per burst: allowed beside the bound
 * (capacity + refill × elapsed, src/domain/admission-bound.ts), the checks shed
 * (503 RATELIMIT_OVERLOADED), those the fallback decided, and the p99 latency of a check.
 * The service-level version, 3 processes over HTTP, is test/parallel-burst.test.ts.
 *
 * @example
 * const rows = await runBurstScenario(target, { log });
 */
import type { BenchResult } from "@casebook/lab/bench-report";
import { scenarioRows } from "@casebook/lab/bench-rows";
import { createRateLimiter } from "../src/create-rate-limiter.ts";
import { admissionBound } from "../src/domain/admission-bound.ts";
import type { Limit } from "../src/domain/algorithm.ts";
import { descriptor } from "../src/domain/descriptors.ts";
import { parsePolicyConfig } from "../src/domain/policy.ts";
import { rateLimitErrors } from "../src/errors.ts";
import { system } from "./bench-rows.ts";
import type { RedisTarget } from "./redis-target.ts";

export const burstSizes = [50, 200, 400, 1_000, 3_000] as const;

const limits: readonly Limit[] = [
  { algorithm: "fixed-window", limit: 100, windowMs: 3_600_000 },
  { algorithm: "token-bucket", capacity: 100, ratePerS: 100 / 3_600 },
];

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)] ?? 0;
}

/**
 * Runs every burst and returns its rows.
 *
 * @example
 * renderBench(await runBurstScenario(target, { log }), "markdown");
 */
export async function runBurstScenario(
  target: RedisTarget,
  options: { log: (line: string) => void; sizes?: readonly number[] },
): Promise<BenchResult[]> {
  const policies = parsePolicyConfig({
    domain: "burst",
    policies: limits.map((limit) => ({ name: limit.algorithm, key: "user:{user}", limit, failMode: "open" })),
  });
  const rl = await createRateLimiter({
    policies,
    redisUrl: target.url,
    keyPrefix: `${target.keyPrefix}burst:`,
  });
  const rows: BenchResult[] = [];
  let sequence = 0;
  try {
    await rl.limiter.check({ descriptor: descriptor({ user: "warm" }), requestId: "warm" });
    for (const size of options.sizes ?? burstSizes) {
      for (const limit of limits) {
        const user = `burst-${size}-${limit.algorithm}`;
        options.log(`burst of ${size}: ${limit.algorithm}`);
        const startWallMs = Date.now();
        const started = performance.now();
        const answers = await Promise.all(
          Array.from({ length: size }, async () => {
            const t0 = performance.now();
            try {
              const r = await rl.limiter.check({
                descriptor: descriptor({ user }),
                requestId: `b${++sequence}`,
                policies: [limit.algorithm],
              });
              return {
                ms: performance.now() - t0,
                allowed: r.outcome === "allowed",
                degraded: r.degraded,
                shed: false,
              };
            } catch (error) {
              if (!rateLimitErrors.is(error, "RATELIMIT_OVERLOADED")) throw error;
              return { ms: performance.now() - t0, allowed: false, degraded: false, shed: true };
            }
          }),
        );
        const elapsedMs = performance.now() - started;
        const row = scenarioRows({ system, scenario: `burst of ${size}, one key, ${limit.algorithm} 100/h` });
        rows.push(
          row.value("allowed", "count", answers.filter((a) => a.allowed).length, {
            direction: "lower-is-better",
          }),
          row.value(
            "bound (capacity + refill × elapsed)",
            "count",
            admissionBound(limit, startWallMs, startWallMs + elapsedMs),
            { tidy: true, direction: "lower-is-better" },
          ),
          row.count("shed (503 RATELIMIT_OVERLOADED)", answers.filter((a) => a.shed).length),
          row.count("decided by the fallback", answers.filter((a) => a.degraded).length),
          row.value("latency p99", "ms", p99(answers.map((a) => a.ms)), { tidy: true }),
        );
      }
    }
  } finally {
    await rl.close();
  }
  return rows;
}

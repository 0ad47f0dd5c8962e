/**
 * The limiter's Prometheus metrics: decisions by policy and outcome, store latency,
 * breaker state and the "limiter degraded" alarm (RL-11: opening silently is how
 * protection gets lost without anyone knowing).
 */
import { scrapedGauge } from "@casebook/infra/http/metrics";
import type { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { Counter, Histogram, type Registry } from "prom-client";
import type { CheckResult, Limiter } from "../domain/limiter.ts";

const BREAKER_STATES = { closed: 0, "half-open": 1, open: 2 } as const;

export interface LimiterMetrics {
  observe(result: CheckResult, seconds: number): void;
}

export function createLimiterMetrics(
  registry: Registry,
  limiter: Limiter,
  breaker: CircuitBreaker,
): LimiterMetrics {
  const decisions = new Counter({
    name: "ratelimit_decisions_total",
    help: "Decisions per policy and outcome (allowed, limited, shadow_limited, unavailable).",
    labelNames: ["policy", "outcome"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "ratelimit_check_duration_seconds",
    help: "Time to decide one request, store round trip included.",
    labelNames: ["path"] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1],
    registers: [registry],
  });
  scrapedGauge(
    registry,
    "ratelimit_degraded",
    "1 while decisions come from the fallback (store failing or breaker open).",
    () => (limiter.degraded ? 1 : 0),
  );
  scrapedGauge(
    registry,
    "ratelimit_breaker_state",
    "Store circuit breaker: 0 closed, 1 half-open, 2 open.",
    () => BREAKER_STATES[breaker.state],
  );
  return {
    observe(result, seconds) {
      latency.observe({ path: result.degraded ? "fallback" : "store" }, seconds);
      if (result.outcome === "unavailable") decisions.inc({ policy: "*", outcome: "unavailable" });
      for (const limit of result.limits) {
        const outcome = limit.shadowRefused ? "shadow_limited" : limit.allowed ? "allowed" : "limited";
        decisions.inc({ policy: limit.policy, outcome });
      }
    },
  };
}

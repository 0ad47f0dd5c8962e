/**
 * The limiter's Prometheus metrics: decisions by policy and outcome, store latency,
 * breaker state and the "limiter degraded" alarm (RL-11: opening silently is how
 * protection gets lost without anyone knowing).
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { scrapedGauge } from "@casebook/infra/http/metrics";
import type { AdmissionGate } from "@casebook/kit/admission-gate";
import type { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { Counter, Histogram, type Registry } from "prom-client";
import type { CheckResult, Limiter } from "./domain/limiter.ts";

const BREAKER_STATES = { closed: 0, "half-open": 1, open: 2 } as const;

export interface LimiterMetrics {
  observe(result: CheckResult, seconds: number): void;
}

/** What the overload side of the limiter exposes (issue 12): shedding, in-flight, instances, our loop's delay. */
export interface LoadSources {
  readonly gate: AdmissionGate;
  instances(): number;
}

export interface LimiterMetricsHandle extends LimiterMetrics {
  /** Stops the event-loop delay monitor. */
  stop(): void;
}

export function createLimiterMetrics(
  registry: Registry,
  limiter: Limiter,
  breaker: CircuitBreaker,
  load?: LoadSources,
): LimiterMetricsHandle {
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
  // Our own event loop's delay, apart from Redis's latency: a decision's timeout never counts it
  // (reply-deadline.ts); this gauge says when the process, not Redis, is the bottleneck.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  scrapedGauge(
    registry,
    "ratelimit_event_loop_delay_p99_seconds",
    "p99 of this process's event-loop delay since the last scrape (perf_hooks.monitorEventLoopDelay).",
    () => {
      const p99 = loopDelay.percentile(99) / 1e9;
      loopDelay.reset();
      return p99;
    },
  );
  if (load) {
    const gate = load.gate;
    // Sheds are not refusals: the client is not over its limit (503 RATELIMIT_OVERLOADED, not 429).
    new Counter({
      name: "ratelimit_shed_total",
      help: "Checks shed undecided because this instance had too many decisions in flight (503 RATELIMIT_OVERLOADED), by reason.",
      labelNames: ["reason"] as const,
      registers: [registry],
      collect() {
        this.reset();
        const shed = gate.shed;
        this.inc({ reason: "queue-full" }, shed["queue-full"]);
        this.inc({ reason: "queue-wait" }, shed["queue-wait"]);
      },
    });
    scrapedGauge(
      registry,
      "ratelimit_in_flight",
      "Store decisions in flight in this process.",
      () => gate.inFlight,
    );
    scrapedGauge(registry, "ratelimit_queued", "Checks waiting for a decision slot.", () => gate.queued);
    scrapedGauge(
      registry,
      "ratelimit_instances",
      "Instances fail-open divides each quota by (live heartbeats in Redis, at least RATE_LIMITER_INSTANCES).",
      () => load.instances(),
    );
  }
  return {
    stop: () => loopDelay.disable(),
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

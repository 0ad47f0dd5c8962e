/**
 * The console's fault scenario for the rate limiter (000 §1.3 "falhas", RL-11 and RL-12 shown
 * live): a limiter of its own on a PRIVATE redis-server (lab's spawner, a free loopback port,
 * never the machine's shared Redis nor this service's store), two policies — `reads` fail-open,
 * `billing` fail-closed — and one check of each every tick. Redis answers, then is stopped
 * (SIGKILL: connections refused), then restarted (empty, same port). Each decision is counted
 * by policy and by who decided (Redis, the local fallback, or nobody: unavailable); the plot
 * shows the counts as they grow, the sentence what each fail mode did while Redis was away and
 * how long after the restart Redis decided again. Bounded: each phase by its own duration,
 * the recovery by `recoveryMaxMs`; the redis-server and the limiter are stopped in every case.
 *
 * @example
 * new ScenarioRuns([redisStoppedScenario()]);
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { createRateLimiter, type RateLimiter } from "../create-rate-limiter.ts";
import { descriptor } from "../domain/descriptors.ts";
import type { CheckResult } from "../domain/limiter.ts";
import { parsePolicyConfig } from "../domain/policy.ts";

export interface RedisStoppedOptions {
  /** Redis answering before the stop. Default 2 000. */
  warmMs?: number;
  /** Redis stopped. Default 4 000. */
  outageMs?: number;
  /** Longest wait, after the restart, for both policies to be decided by Redis again. Default 15 000. */
  recoveryMaxMs?: number;
  /** Checks kept going once Redis decides again, so the plot shows it. Default 1 000. */
  tailMs?: number;
  /** One check per policy each tick. Default 100. */
  tickMs?: number;
}

/** Limits far above the scenario's rate: every refusal plotted is the fail mode's, never the limit's. */
const scenarioPolicies = parsePolicyConfig({
  domain: "scenario-redis-stopped",
  policies: [
    {
      name: "reads",
      match: { method: "GET" },
      key: "user:{user}",
      limit: { algorithm: "token-bucket", capacity: 1_000, ratePerS: 100 },
      failMode: "open",
    },
    {
      name: "billing",
      match: { route: "/v1/billing*" },
      key: "user:{user}:route:{route}",
      limit: { algorithm: "token-bucket", capacity: 1_000, ratePerS: 100 },
      failMode: "closed",
    },
  ],
});

type Phase = "before" | "outage" | "after";
/** Who decided a check: Redis, the in-memory fallback (fail-open), or nobody (fail-closed). */
type Decider = "redis" | "local" | "refused";

const policyNames = ["reads", "billing"] as const;
type PolicyName = (typeof policyNames)[number];

function deciderOf(result: CheckResult): Decider {
  if (result.outcome === "unavailable") return "refused";
  return result.degraded ? "local" : "redis";
}

/**
 * The plot's lines: what each policy let through, and what the fail-closed one refused. Before
 * the stop both "allowed" lines climb together; while Redis is away fail-open's keeps climbing
 * (the local limiter) and fail-closed's goes flat while its "refused" line climbs instead.
 */
const seriesName: Record<PolicyName, Record<Decider, string>> = {
  reads: {
    redis: "reads (fail-open): allowed",
    local: "reads (fail-open): allowed",
    refused: "reads (fail-open): refused, unavailable",
  },
  billing: {
    redis: "billing (fail-closed): allowed",
    local: "billing (fail-closed): allowed",
    refused: "billing (fail-closed): refused, unavailable",
  },
};

/** Counts of decisions by phase, policy and decider, plotted as cumulative lines. */
class DecisionTally {
  readonly counts = new Map<string, number>();
  readonly #totals = new Map<string, number>();
  readonly #ctx: ScenarioContext;
  readonly #startedMs = performance.now();

  constructor(ctx: ScenarioContext) {
    this.#ctx = ctx;
  }

  add(phase: Phase, policy: PolicyName, decider: Decider): void {
    const key = `${phase}/${policy}/${decider}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    const series = seriesName[policy][decider];
    const total = (this.#totals.get(series) ?? 0) + 1;
    this.#totals.set(series, total);
    this.#ctx.point(series, Math.round(performance.now() - this.#startedMs) / 1_000, total);
  }

  get(phase: Phase, policy: PolicyName, decider: Decider): number {
    return this.counts.get(`${phase}/${policy}/${decider}`) ?? 0;
  }

  inPhase(phase: Phase, policy: PolicyName): number {
    return (["redis", "local", "refused"] as const).reduce((n, d) => n + this.get(phase, policy, d), 0);
  }

  all(): number {
    return [...this.counts.values()].reduce((a, b) => a + b, 0);
  }
}

/** One check of each policy; returns who decided each. */
async function checkBoth(rl: RateLimiter, user: string): Promise<Record<PolicyName, Decider>> {
  const [reads, billing] = await Promise.all([
    rl.limiter.check({
      descriptor: descriptor({ user, method: "GET", route: "/v1/items" }),
      requestId: randomUUID(),
    }),
    rl.limiter.check({
      descriptor: descriptor({ user, method: "POST", route: "/v1/billing/charge" }),
      requestId: randomUUID(),
    }),
  ]);
  return { reads: deciderOf(reads), billing: deciderOf(billing) };
}

export function redisStoppedScenario(options: RedisStoppedOptions = {}): Scenario {
  const warmMs = options.warmMs ?? 2_000;
  const outageMs = options.outageMs ?? 4_000;
  const recoveryMaxMs = options.recoveryMaxMs ?? 15_000;
  const tailMs = options.tailMs ?? 1_000;
  const tickMs = options.tickMs ?? 100;
  return {
    id: "redis-stopped",
    title: "Redis stopped: fail-open beside fail-closed",
    line: `A private redis-server stopped for ${outageMs / 1_000} s under a fail-open and a fail-closed policy, then restarted: who decides each check, and when Redis decides again.`,
    xLabel: "s from the start",
    yLabel: "checks so far",
    run: async (ctx) => {
      const signal = ctx.signal;
      let redis: SpawnedRedis | undefined;
      let rl: RateLimiter | undefined;
      try {
        redis = await spawnRedis({ install: false });
        rl = await createRateLimiter({
          policies: scenarioPolicies,
          redisUrl: redis.url,
          keyPrefix: `scenario:${randomUUID().slice(0, 8)}:`,
          // Short bounds so the outage is seen in a few checks, not seconds.
          timeoutMs: 100,
          breakerFailures: 3,
          breakerOpenMs: 500,
          connectTimeoutMs: 2_000,
          heartbeatMs: 500,
        });
        const tally = new DecisionTally(ctx);
        const user = `scenario-${randomUUID().slice(0, 8)}`;
        const tick = async (phase: Phase) => {
          const decided = await checkBoth(rl!, user);
          for (const policy of policyNames) tally.add(phase, policy, decided[policy]);
          await sleep(tickMs, undefined, { signal });
          return decided;
        };
        const runFor = async (phase: Phase, ms: number, from: number, to: number) => {
          const endMs = performance.now() + ms;
          while (performance.now() < endMs) {
            await tick(phase);
            ctx.progress(from + ((to - from) * (ms - (endMs - performance.now()))) / ms);
          }
        };
        await runFor("before", warmMs, 0, 0.2);
        await redis.kill();
        await runFor("outage", outageMs, 0.2, 0.6);
        const restartedMs = performance.now();
        await redis.restart();
        let backAfterMs: number | undefined;
        while (performance.now() - restartedMs < recoveryMaxMs) {
          const decided = await tick("after");
          ctx.progress(0.6 + (0.3 * (performance.now() - restartedMs)) / recoveryMaxMs);
          if (decided.reads === "redis" && decided.billing === "redis") {
            backAfterMs = performance.now() - restartedMs;
            break;
          }
        }
        if (backAfterMs !== undefined) await runFor("after", tailMs, 0.9, 1);
        return sentence(tally, outageMs, recoveryMaxMs, backAfterMs);
      } finally {
        await Promise.allSettled([rl?.close()]);
        await Promise.allSettled([redis?.stop()]);
      }
    },
  };
}

function sentence(
  tally: DecisionTally,
  outageMs: number,
  recoveryMaxMs: number,
  backAfterMs: number | undefined,
): string {
  const readsOut = tally.inPhase("outage", "reads");
  const billingOut = tally.inPhase("outage", "billing");
  const before = tally.get("before", "reads", "redis") + tally.get("before", "billing", "redis");
  const back =
    backAfterMs === undefined
      ? `Redis had not decided again ${recoveryMaxMs / 1_000} s after its restart`
      : `Redis decided both again ${(backAfterMs / 1_000).toFixed(1)} s after its restart`;
  return (
    `Redis stopped for ${outageMs / 1_000} s: the fail-open policy allowed ${tally.get("outage", "reads", "local")} of ` +
    `${readsOut} checks from the local limiter (${tally.get("outage", "reads", "redis")} still by Redis, ` +
    `${tally.get("outage", "reads", "refused")} unavailable); the fail-closed policy refused ` +
    `${tally.get("outage", "billing", "refused")} of ${billingOut} as unavailable ` +
    `(${tally.get("outage", "billing", "redis")} by Redis); ${back}. ` +
    `${tally.all()} decisions counted (${before} by Redis before the stop).`
  );
}

/**
 * The decision a request gets: resolve the policies that apply, spend every group
 * in one round trip to the store, compensate when a later group refuses, and fall
 * back by policy when the store fails (000 §1.3, "falhas").
 *
 * - Several groups (different slots or algorithms) are spent together; if any
 *   enforcing group refuses, the groups that did spend are refunded (RL-10's
 *   caveat: in between, a concurrent request may see those units missing — the
 *   limiter errs toward refusing, never toward admitting too much).
 * - Shadow policies are spent and counted but never refuse.
 * - A circuit breaker (kit) sits in front of the store: after consecutive failures
 *   no request waits for the store's timeout; it goes straight to the fallback
 *   (RL-13). Fail-open → the in-memory LocalLimiter holding a fraction of the
 *   quota (RL-11); fail-closed → "unavailable" with a retry-after (RL-12). The
 *   strictest policy of the request decides (any fail-closed limit closes it).
 *
 * Pure apart from the injected store: time from the Clock, no timers.
 */
import type { AdmissionFate, AdmissionGate } from "@casebook/kit/admission-gate";
import type { CircuitBreaker } from "@casebook/kit/circuit-breaker";
import { rateLimitErrors } from "../errors.ts";
import { maxCost } from "./algorithm.ts";
import type { Descriptor } from "./descriptors.ts";
import type { LocalLimiter } from "./local-limiter.ts";
import {
  bucketEquivalent,
  type LimitGroup,
  type PolicyConfig,
  type Resolution,
  type ResolvedLimit,
  resolveLimits,
  type SkippedPolicy,
  skippedPolicies,
} from "./policy.ts";
import type { LimitStatus } from "./rate-limit-headers.ts";
import type { GroupCall, GroupOutcome, LimiterStore } from "./store-port.ts";
import type { SubBucketPicker } from "./sub-buckets.ts";

export type Outcome = "allowed" | "limited" | "unavailable";

export interface LimitResult extends LimitStatus {
  readonly key: string;
  readonly allowed: boolean;
  /** A shadow limit that would have refused: logged and counted, never enforced. */
  readonly shadowRefused: boolean;
}

export interface CheckResult {
  readonly outcome: Outcome;
  /** The strictest limit's remaining units (enforcing limits only); Infinity when none applied. */
  readonly remaining: number;
  readonly resetMs: number;
  /** 0 when allowed; else how long until the same request could pass. */
  readonly retryAfterMs: number;
  /** Shapers (leaky bucket): wait this long before proceeding. */
  readonly delayMs: number;
  readonly limits: readonly LimitResult[];
  /** True when the store was not used (breaker open or store failure): the fallback decided. */
  readonly degraded: boolean;
  readonly failMode: "open" | "closed";
  /** Policies not applied because the request lacks a descriptor they read (they limited nothing). */
  readonly skipped: readonly SkippedPolicy[];
}

/** A decision before the skipped policies are attached. */
type Decision = Omit<CheckResult, "skipped">;

export interface CheckInput {
  readonly descriptor: Descriptor;
  /** Unique per request (sliding-log members, log lines). */
  readonly requestId: string;
  /** Overrides every policy's cost (weighted requests); default the policy's own. */
  readonly cost?: number;
  /** Only these policies (by name); default every policy that matches. */
  readonly policies?: readonly string[];
}

export interface LimiterOptions {
  readonly store: LimiterStore;
  readonly breaker: CircuitBreaker;
  readonly local: LocalLimiter;
  readonly picker: SubBucketPicker;
  /** Retry-After for a fail-closed answer when the breaker has no better estimate. */
  readonly unavailableRetryMs: number;
  /** Called when the store fails (the error is swallowed here and answered by policy). */
  readonly onStoreError?: (error: unknown) => void;
  /**
   * Bound on store decisions in flight in this process, with a short bounded queue
   * (issue 12): past it a check is shed — RATELIMIT_OVERLOADED (503), never decided by
   * the fallback, so an overloaded instance neither admits extra nor refuses wrongly.
   * Undefined: no bound (library users who bound concurrency themselves).
   */
  readonly gate?: AdmissionGate;
  /** Retry-After of a shed check. Default 1 000 ms. */
  readonly shedRetryMs?: number;
}

const NO_LIMIT = { remaining: Number.POSITIVE_INFINITY, resetMs: 0 };

export class Limiter {
  readonly #o: LimiterOptions;
  #config: PolicyConfig;
  #lastStoreFailed = false;
  /** Store calls sent so far, and how many had been sent when the last failure was reported (#storeFailed). */
  #sent = 0;
  #sentAtLastFailure = 0;

  constructor(config: PolicyConfig, options: LimiterOptions) {
    this.#config = config;
    this.#o = options;
  }

  get config(): PolicyConfig {
    return this.#config;
  }

  /**
   * True while decisions come from the fallback: the breaker is not closed or the
   * last store call failed. The "limiter degraded" alarm reads this, not the last
   * answer (a request no policy applies to says nothing about the store).
   */
  get degraded(): boolean {
    return this.#lastStoreFailed || this.#o.breaker.state !== "closed";
  }

  /** Swaps the policies (hot reload); requests in flight finish with the old ones. */
  setConfig(config: PolicyConfig): void {
    this.#config = config;
  }

  async check(input: CheckInput): Promise<CheckResult> {
    // One snapshot: a hot reload mid-call must not mix two configs in one answer.
    const config = this.#config;
    const decision = await this.#decide(config, input);
    return { ...decision, skipped: skippedPolicies(config, input.descriptor, input.policies) };
  }

  async #decide(config: PolicyConfig, input: CheckInput): Promise<Decision> {
    const resolution = resolveLimits(config, input.descriptor, { picker: this.#o.picker });
    const { limits, groups, failMode } =
      input.policies === undefined ? resolution : onlyPolicies(resolution, input.policies);
    if (groups.length === 0) return allowedWithoutLimits(failMode);
    checkCost(limits, input.cost);
    const calls = groups.map((group) => toCall(group, input));
    // Open: the fallback decides at once, holding no slot (nothing waits on Redis).
    if (this.#o.breaker.state === "open") return this.#fallback(config, limits, calls, failMode, input);
    const gate = this.#o.gate;
    if (gate) {
      const fate = await gate.enter();
      if (fate !== "admitted") throw this.#overloaded(fate);
    }
    let outcomes: GroupOutcome[];
    try {
      if (!this.#o.breaker.canRequest()) return this.#fallback(config, limits, calls, failMode, input);
      const sent = ++this.#sent;
      try {
        outcomes = await this.#o.store.spend(calls);
        this.#o.breaker.onSuccess();
        this.#lastStoreFailed = false;
      } catch (error) {
        // Only Redis-side failures get here: a timeout is measured at the socket
        // (reply-deadline.ts), and our own overload was shed above, before any call.
        this.#storeFailed(sent);
        this.#o.onStoreError?.(error);
        return this.#fallback(config, limits, calls, failMode, input);
      }
    } finally {
      gate?.leave();
    }
    await this.#compensate(calls, outcomes);
    const decision = combine(groups, outcomes, failMode);
    this.#mirror(config, groups, calls, outcomes, decision.outcome === "allowed");
    return decision;
  }

  /**
   * Reports a failure to the breaker once per stall, not once per call: the calls that were
   * in flight when Redis stalled all fail together, and count as ONE failure; a call sent
   * after that failure was seen and failing too counts as the next. So N consecutive
   * failures mean Redis failed N times in a row, not that one hiccup caught N requests.
   * A half-open probe is always reported (it holds the breaker's probe slot).
   */
  #storeFailed(sent: number): void {
    this.#lastStoreFailed = true;
    if (sent <= this.#sentAtLastFailure && this.#o.breaker.state === "closed") return;
    this.#sentAtLastFailure = this.#sent;
    this.#o.breaker.onFailure();
  }

  #overloaded(fate: Exclude<AdmissionFate, "admitted">): Error {
    const gate = this.#o.gate!;
    return rateLimitErrors.create("RATELIMIT_OVERLOADED", {
      detail:
        fate === "queue-full"
          ? `This instance has ${gate.inFlight} decisions in flight and ${gate.queued} queued; the check was not decided.`
          : "The check waited its bound for a decision slot; it was not decided.",
      fields: { reason: fate, retryAfterMs: this.#o.shedRetryMs ?? 1_000 },
    });
  }

  /**
   * Keeps the local fallback in step with what Redis decided through this instance
   * (see local-limiter.ts): units an admitted request spent leave this instance's share,
   * and the share never holds more than its part of what Redis said is left.
   */
  #mirror(
    config: PolicyConfig,
    groups: readonly LimitGroup[],
    calls: readonly GroupCall[],
    outcomes: readonly GroupOutcome[],
    admitted: boolean,
  ): void {
    groups.forEach((group, g) => {
      if (group.shadow) return;
      group.limits.forEach((limit, i) => {
        const spent = admitted ? calls[g]!.costs[i]! : 0;
        if (limit.subBucket === undefined) {
          const remaining = outcomes[g]!.keys[i]!.remaining;
          this.#o.local.mirror(limit.key, bucketEquivalent(limit.limit), spent, remaining);
        } else {
          // A sub-bucket's remaining is its own part's, not the key's: mirror the spend only.
          const policy = config.policies.find((p) => p.name === limit.policy)!;
          this.#o.local.mirror(limit.subBucket.baseKey, bucketEquivalent(policy.limit), spent);
        }
      });
    });
  }

  /** Refunds the enforcing groups that spent when another enforcing group refused. */
  async #compensate(calls: readonly GroupCall[], outcomes: readonly GroupOutcome[]): Promise<void> {
    const enforcing = calls.map((call, i) => ({ call, outcome: outcomes[i]!, shadow: isShadow(call) }));
    const refused = enforcing.some((e) => !e.shadow && !e.outcome.allowed);
    if (!refused) return;
    const spent = enforcing.filter((e) => !e.shadow && e.outcome.allowed).map((e) => e.call);
    try {
      await this.#o.store.refund(spent);
    } catch (error) {
      // A lost refund only makes the limit stricter for a while: report it, decide anyway.
      this.#o.onStoreError?.(error);
    }
  }

  #fallback(
    config: PolicyConfig,
    limits: readonly ResolvedLimit[],
    calls: readonly GroupCall[],
    failMode: "open" | "closed",
    input: CheckInput,
  ): Decision {
    if (failMode === "closed") {
      const retryAfterMs = Math.max(this.#o.breaker.retryAfterMs(), this.#o.unavailableRetryMs);
      return {
        outcome: "unavailable",
        ...NO_LIMIT,
        retryAfterMs,
        delayMs: 0,
        limits: [],
        degraded: true,
        failMode,
      };
    }
    const costs = new Map(calls.flatMap((call) => call.keys.map((key, i) => [key, call.costs[i]!] as const)));
    const results: LimitResult[] = limits.map((limit) => {
      const base = limit.subBucket?.baseKey ?? limit.key;
      const policy = config.policies.find((p) => p.name === limit.policy)!;
      const decision = this.#o.local.take(
        base,
        bucketEquivalent(policy.limit),
        costs.get(limit.key) ?? input.cost ?? 1,
      );
      return {
        ...statusOf(limit, decision.remaining, decision.resetMs),
        allowed: decision.allowed || limit.shadow,
        refused: !decision.allowed && !limit.shadow,
        shadowRefused: !decision.allowed && limit.shadow,
        retryAfterMs: decision.retryAfterMs,
      };
    });
    return summarize(results, 0, failMode, true);
  }
}

/** Keeps the named policies; the strictest of THOSE decides the fail mode. */
function onlyPolicies(resolution: Resolution, names: readonly string[]): Resolution {
  const limits = resolution.limits.filter((limit) => names.includes(limit.policy));
  const groups = resolution.groups
    .map((group) => ({ ...group, limits: group.limits.filter((limit) => limits.includes(limit)) }))
    .filter((group) => group.limits.length > 0);
  const failMode = limits.some((l) => !l.shadow && l.failMode === "closed") ? "closed" : "open";
  return { limits, groups, failMode };
}

/**
 * A cost no bucket of the request could ever hold is the caller's mistake, not the
 * store's: refused up front (400), before it can spend anything or trip the breaker.
 */
function checkCost(limits: readonly ResolvedLimit[], cost: number | undefined): void {
  if (cost === undefined) return;
  for (const limit of limits) {
    const max = maxCost(limit.limit);
    if (cost > max) {
      throw rateLimitErrors.create("RATELIMIT_COST_TOO_HIGH", {
        detail: `cost ${cost} exceeds what policy ${limit.policy} can ever admit at once (${max}).`,
        fields: { policy: limit.policy, cost, maxCost: max },
      });
    }
  }
}

function isShadow(call: GroupCall): boolean {
  return (call as GroupCall & { shadow?: boolean }).shadow === true;
}

function toCall(group: LimitGroup, input: CheckInput): GroupCall & { shadow: boolean } {
  return {
    algorithm: group.algorithm,
    keys: group.limits.map((limit) => limit.key),
    limits: group.limits.map((limit) => limit.limit),
    costs: group.limits.map((limit) => input.cost ?? limit.cost),
    requestId: input.requestId,
    shadow: group.shadow,
  };
}

function statusOf(limit: ResolvedLimit, remaining: number, resetMs: number): LimitStatus & { key: string } {
  return {
    policy: limit.policy,
    key: limit.key,
    quota: limit.quota.quota,
    windowS: limit.quota.windowS,
    remaining: Math.max(0, remaining),
    resetMs,
    shadow: limit.shadow,
  };
}

function combine(
  groups: readonly LimitGroup[],
  outcomes: readonly GroupOutcome[],
  failMode: "open" | "closed",
): Decision {
  const results: LimitResult[] = [];
  let delayMs = 0;
  groups.forEach((group, g) => {
    const outcome = outcomes[g]!;
    if (!group.shadow && outcome.allowed) delayMs = Math.max(delayMs, outcome.delayMs);
    group.limits.forEach((limit, i) => {
      const key = outcome.keys[i]!;
      results.push({
        ...statusOf(limit, key.remaining, key.resetMs),
        allowed: key.allowed || group.shadow,
        // In a refused all-or-nothing group, keys that would have allowed did not refuse.
        refused: !key.allowed && !group.shadow,
        shadowRefused: !key.allowed && group.shadow,
        retryAfterMs: key.allowed ? 0 : outcome.retryAfterMs,
      });
    });
  });
  return summarize(results, delayMs, failMode, false);
}

function summarize(
  results: readonly LimitResult[],
  delayMs: number,
  failMode: "open" | "closed",
  degraded: boolean,
): Decision {
  const enforcing = results.filter((r) => !r.shadow);
  const refused = enforcing.filter((r) => r.refused);
  const allowed = refused.length === 0;
  return {
    outcome: allowed ? "allowed" : "limited",
    remaining: Math.min(NO_LIMIT.remaining, ...enforcing.map((r) => r.remaining)),
    resetMs: Math.max(0, ...enforcing.map((r) => r.resetMs)),
    retryAfterMs: allowed ? 0 : Math.max(...refused.map((r) => r.retryAfterMs ?? 0)),
    delayMs: allowed ? delayMs : 0,
    limits: results,
    degraded,
    failMode,
  };
}

function allowedWithoutLimits(failMode: "open" | "closed"): Decision {
  return {
    outcome: "allowed",
    ...NO_LIMIT,
    retryAfterMs: 0,
    delayMs: 0,
    limits: [],
    degraded: false,
    failMode,
  };
}

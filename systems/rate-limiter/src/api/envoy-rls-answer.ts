/**
 * Answering an Envoy RateLimitRequest with the Limiter: which policies a descriptor
 * selects, Envoy's view of a limit (requests per unit), per-descriptor statuses and
 * the response headers (see docs/rate-limiter-envoy.md).
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "@casebook/infra/http/logger";
import * as grpc from "@grpc/grpc-js";
import { maxCost } from "../domain/algorithm.ts";
import type { DescriptorKey } from "../domain/descriptors.ts";
import type { CheckResult, Limiter, LimitResult } from "../domain/limiter.ts";
import {
  bucketEquivalent,
  costOf,
  type Limit,
  type Policy,
  policyApplies,
  quotaOf,
} from "../domain/policy.ts";
import { type LimitStatus, mostRestrictive, rateLimitHeaders } from "../domain/rate-limit-headers.ts";
import { splitLimit } from "../domain/sub-buckets.ts";
import type { LimiterMetrics } from "../metrics.ts";
import { ENVOY_KEY_ALIASES, type ParsedDescriptor, parseRlsRequest } from "./envoy-rls-request.ts";
import type { EnvoyCode, EnvoyUnit, RlsDescriptorStatus, RlsRequest, RlsResponse } from "./envoy-rls-wire.ts";

// ---------------------------------------------------------------- options

export interface EnvoyRlsOptions {
  readonly limiter: Limiter;
  /** 0 = any free port (tests). */
  readonly port: number;
  readonly host: string;
  readonly log: Logger;
  /** Counts Envoy's decisions with the HTTP API's. */
  readonly metrics?: LimiterMetrics;
  /** Envoy descriptor key → our key; replaces ENVOY_KEY_ALIASES. Our own keys always pass. */
  readonly keyAliases?: Readonly<Record<string, DescriptorKey>>;
  /** When response_headers_to_add carries the RL-15 headers. Default "over-limit". */
  readonly headers?: "over-limit" | "always" | "never";
  /** How long close() waits for calls in flight before cutting them. Default 5 000. */
  readonly drainTimeoutMs?: number;
  /** Bound on one request or response message. Default 1 MiB. */
  readonly maxMessageBytes?: number;
  /** Bound on concurrent calls per HTTP/2 connection (Envoy multiplexes on a few). Default 1 024. */
  readonly maxConcurrentStreams?: number;
  /**
   * Bearer tokens a call must carry in its `authorization` metadata (`Bearer <token>`;
   * Envoy's grpc_service `initial_metadata` sets it); a call without one of them is
   * UNAUTHENTICATED. Unset or empty = no check (main.ts allows that on loopback only).
   */
  readonly tokens?: readonly string[];
}

export interface EnvoyRls {
  /** The port actually bound (useful with port 0). */
  readonly port: number;
  /** Stops accepting calls, drains those in flight (bounded by drainTimeoutMs). */
  close(): Promise<void>;
}

export const envoyRlsDefaults = {
  headers: "over-limit",
  drainTimeoutMs: 5_000,
  maxMessageBytes: 1_048_576,
  maxConcurrentStreams: 1_024,
} as const;

// ---------------------------------------------------------------- Envoy's view of a limit

const MAX_UINT32 = 4_294_967_295;
/** MONTH and YEAR as fixed lengths (30 and 365 days), as envoyproxy/ratelimit counts them. */
const UNIT_S: readonly (readonly [EnvoyUnit, number])[] = [
  ["SECOND", 1],
  ["MINUTE", 60],
  ["HOUR", 3_600],
  ["DAY", 86_400],
  ["MONTH", 2_592_000],
  ["YEAR", 31_536_000],
];

function perUnit(limit: Limit, unitS: number): number {
  // Windowed limits are exact as limit per window; buckets as their long-run refill rate.
  if ("windowMs" in limit) return (limit.limit * unitS * 1_000) / limit.windowMs;
  return bucketEquivalent(limit).ratePerS * unitS;
}

/**
 * A policy's limit as Envoy's `requests_per_unit` + `unit`: the smallest unit in which
 * the rate is a whole number (1 000 per 60 s → 1 000/MINUTE, 0.5/s → 30/MINUTE); when no
 * unit gives a whole number, the largest unit whose count fits a uint32, rounded (the
 * larger the count, the smaller the rounding error). Windowed algorithms use
 * limit/window, buckets (token, leaky, GCRA) their refill rate.
 *
 * @example
 * envoyRateLimit({ algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }); // { requestsPerUnit: 30, unit: "MINUTE" }
 */
export function envoyRateLimit(limit: Limit): { requestsPerUnit: number; unit: EnvoyUnit } {
  for (const [unit, seconds] of UNIT_S) {
    const n = perUnit(limit, seconds);
    const whole = Math.round(n);
    if (whole >= 1 && whole <= MAX_UINT32 && Math.abs(n - whole) <= 1e-9 * whole)
      return { requestsPerUnit: whole, unit };
  }
  for (const [unit, seconds] of [...UNIT_S].reverse()) {
    const whole = Math.round(perUnit(limit, seconds));
    if (whole <= MAX_UINT32) return { requestsPerUnit: Math.max(1, whole), unit };
  }
  return { requestsPerUnit: MAX_UINT32, unit: "SECOND" };
}

function durationOf(ms: number): { seconds: number; nanos: number } {
  const safe = Math.max(0, Math.ceil(ms));
  return { seconds: Math.floor(safe / 1_000), nanos: (safe % 1_000) * 1_000_000 };
}

// ---------------------------------------------------------------- deciding one descriptor

type Decision =
  | { readonly kind: "unmatched" }
  | { readonly kind: "unavailable"; readonly retryAfterMs: number }
  /** `limits`: the states of the enforcing limits (empty for a check-only descriptor). */
  | { readonly kind: "decided"; readonly over: boolean; readonly limits: readonly LimitStatus[] };

/** The policies built from exactly the descriptor's keys (see the file header). */
function policiesFor(policies: readonly Policy[], parsed: ParsedDescriptor): Policy[] {
  const d = parsed.descriptor;
  if (d === undefined) return [];
  return policies.filter((policy) => {
    const required = new Set<DescriptorKey>([...policy.key.keys, ...policy.match.keys()]);
    for (const key of required) if (!parsed.keys.has(key)) return false;
    for (const key of parsed.keys) {
      const optional = key === "route" && policy.cost.routes.size > 0;
      if (!required.has(key) && !optional) return false;
    }
    return policyApplies(policy, d);
  });
}

/** The largest cost one request can pass with: the smallest sub-bucket's burst when split. */
function passableCost(policy: Policy): number {
  const n = policy.subBuckets;
  return maxCost(n > 1 ? splitLimit(policy.limit, n - 1, n) : policy.limit);
}

function neverPasses(policy: Policy): LimitStatus {
  const { quota, windowS } = quotaOf(policy.limit);
  // No wait makes this cost pass; a full window is the soonest the client should try anything.
  return {
    policy: policy.name,
    quota,
    windowS,
    remaining: 0,
    resetMs: 0,
    refused: true,
    retryAfterMs: windowS * 1_000,
  };
}

interface DecideContext {
  readonly limiter: Limiter;
  /** The config snapshot this call answers with (a hot reload mid-call does not mix two). */
  readonly policies: readonly Policy[];
  readonly log: Logger;
  readonly metrics: LimiterMetrics | undefined;
  readonly requestId: string;
}

async function decideDescriptor(ctx: DecideContext, parsed: ParsedDescriptor): Promise<Decision> {
  const matched = policiesFor(ctx.policies, parsed);
  const d = parsed.descriptor;
  if (d === undefined || matched.length === 0) {
    if (parsed.why) ctx.log.debug({ why: parsed.why }, "envoy descriptor matches no policy");
    return { kind: "unmatched" };
  }
  if (parsed.hits === 0) return { kind: "decided", over: false, limits: [] };
  const costFor = (policy: Policy) => parsed.hits ?? costOf(policy, d);
  const tooCostly = matched.filter((policy) => costFor(policy) > passableCost(policy));
  for (const policy of tooCostly.filter((p) => p.shadow))
    ctx.log.info({ policy: policy.name }, "shadow limit would have refused");
  const enforcing = tooCostly.filter((policy) => !policy.shadow);
  // Refused before the store: a denied request never spends, on any of its policies.
  if (enforcing.length > 0) return { kind: "decided", over: true, limits: enforcing.map(neverPasses) };
  const names = matched.filter((policy) => !tooCostly.includes(policy)).map((policy) => policy.name);
  if (names.length === 0) return { kind: "unmatched" };
  const started = performance.now();
  const result = await ctx.limiter.check({
    descriptor: d,
    requestId: ctx.requestId,
    cost: parsed.hits,
    policies: names,
  });
  ctx.metrics?.observe(result, (performance.now() - started) / 1_000);
  return decisionOf(ctx, result);
}

function decisionOf(ctx: DecideContext, result: CheckResult): Decision {
  if (result.outcome === "unavailable") return { kind: "unavailable", retryAfterMs: result.retryAfterMs };
  for (const limit of result.limits)
    if (limit.shadowRefused) ctx.log.info({ policy: limit.policy }, "shadow limit would have refused");
  const limits = result.limits.filter((limit: LimitResult) => !limit.shadow);
  if (limits.length === 0) return { kind: "unmatched" };
  return { kind: "decided", over: result.outcome === "limited", limits };
}

// ---------------------------------------------------------------- the response

function statusOf(decision: Decision, policies: readonly Policy[]): RlsDescriptorStatus {
  if (decision.kind !== "decided") return { code: "OK" };
  const code: EnvoyCode = decision.over ? "OVER_LIMIT" : "OK";
  const primary = mostRestrictive(decision.limits);
  const policy = primary && policies.find((p) => p.name === primary.policy);
  if (!primary || !policy) return { code };
  const { requestsPerUnit, unit } = envoyRateLimit(policy.limit);
  return {
    code,
    current_limit: { name: policy.name, requests_per_unit: requestsPerUnit, unit },
    limit_remaining: Math.min(MAX_UINT32, Math.max(0, Math.floor(primary.remaining))),
    duration_until_reset: durationOf(primary.refused ? (primary.retryAfterMs ?? 0) : primary.resetMs),
  };
}

/** One entry per policy across descriptors: the most restrictive state of that policy. */
function mergeByPolicy(decisions: readonly Decision[]): LimitStatus[] {
  const byPolicy = new Map<string, LimitStatus>();
  for (const decision of decisions) {
    if (decision.kind !== "decided") continue;
    for (const limit of decision.limits) {
      const seen = byPolicy.get(limit.policy);
      byPolicy.set(limit.policy, seen ? mostRestrictive([seen, limit])! : limit);
    }
  }
  return [...byPolicy.values()];
}

function responseOf(
  decisions: readonly Decision[],
  policies: readonly Policy[],
  headers: NonNullable<EnvoyRlsOptions["headers"]>,
): RlsResponse {
  const over = decisions.some((d) => d.kind === "decided" && d.over);
  const statuses = decisions.map((d) => statusOf(d, policies));
  const wanted = headers === "always" || (headers === "over-limit" && over);
  const limits = wanted ? mergeByPolicy(decisions) : [];
  const pairs =
    limits.length === 0
      ? {}
      : rateLimitHeaders(over ? { outcome: "limited", limits } : { outcome: "allowed", limits });
  return {
    overall_code: over ? "OVER_LIMIT" : "OK",
    statuses,
    response_headers_to_add: Object.entries(pairs).map(([key, value]) => ({ key, value })),
  };
}

/** A gRPC error status; grpc-js sends `code` and `details` to the caller. */
type CallError = Partial<grpc.StatusObject> & { code: grpc.status };

/**
 * Answers one decoded RateLimitRequest: the response, or the gRPC error to send
 * (INVALID_ARGUMENT for a malformed request, UNAVAILABLE when a fail-closed policy
 * cannot be decided).
 *
 * @example
 * const out = await answerRlsRequest(request, { limiter, log });
 * if ("error" in out) callback(out.error); else callback(null, out.response);
 */
export async function answerRlsRequest(
  raw: RlsRequest,
  options: Pick<EnvoyRlsOptions, "limiter" | "log" | "metrics" | "keyAliases" | "headers">,
): Promise<{ response: RlsResponse } | { error: CallError }> {
  const parsed = parseRlsRequest(raw, options.keyAliases ?? ENVOY_KEY_ALIASES);
  if (!parsed.ok) return { error: { code: grpc.status.INVALID_ARGUMENT, details: parsed.problem } };
  const config = options.limiter.config;
  const { domain, descriptors } = parsed.request;
  if (domain !== config.domain) {
    // envoyproxy/ratelimit answers an unknown domain with "no limit": Envoy lets the request through.
    options.log.debug({ domain, configured: config.domain }, "envoy domain matches no policy config");
    return {
      response: responseOf(
        descriptors.map(() => ({ kind: "unmatched" })),
        [],
        "never",
      ),
    };
  }
  const callId = randomUUID();
  const { limiter, log, metrics } = options;
  // Descriptors are independent checks (Envoy: "limit on ALL of them"), so they run concurrently.
  const decisions = await Promise.all(
    descriptors.map((d, i) =>
      decideDescriptor(
        { limiter, log, metrics, policies: config.policies, requestId: `envoy:${callId}:${i}` },
        d,
      ),
    ),
  );
  const unavailable = decisions.filter((d) => d.kind === "unavailable");
  if (unavailable.length > 0) {
    const retryAfterMs = Math.max(...unavailable.map((d) => d.retryAfterMs));
    return {
      error: {
        code: grpc.status.UNAVAILABLE,
        details: `rate limiter store unavailable and a fail-closed policy applies; retry in ${retryAfterMs} ms`,
      },
    };
  }
  const headers = options.headers ?? envoyRlsDefaults.headers;
  return { response: responseOf(decisions, config.policies, headers) };
}

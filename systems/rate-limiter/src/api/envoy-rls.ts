/**
 * Envoy's v3 rate limit service over gRPC
 * (`envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`), so a stock Envoy's
 * `envoy.filters.http.ratelimit` filter can use this limiter the way it uses
 * envoyproxy/ratelimit. The wire contract is our own subset of Envoy's messages
 * (src/api/proto/, same package/field names and numbers).
 *
 * How a request is answered (docs-envoy.md has the operator's version):
 * - `domain` must equal the policy config's `domain`; any other domain matches no
 *   policy and every descriptor is OK (envoyproxy/ratelimit does the same).
 * - Each Envoy descriptor becomes one of our descriptors: entry keys that are ours
 *   (`ip`, `apiKey`, `plan`, `user`, `route`, `method`) pass as they are, Envoy's
 *   built-in keys go through `keyAliases` (`remote_address` → ip, …). A descriptor
 *   with any other key, a repeated key or an empty value matches no policy (OK):
 *   Envoy sends the same descriptors whatever the service behind it knows.
 * - Like envoyproxy/ratelimit's nested descriptors, a descriptor selects the policies
 *   built from exactly its keys: the policy's key template plus its `match` (plus
 *   `route` when the policy has per-route costs). So [remote_address] hits `ip:{ip}`
 *   policies and [user, route] hits `user:{user}:route:{route}` policies, and one
 *   request never spends one policy twice through two descriptors.
 * - Units: the descriptor's `hits_addend` if set, else the request's if non-zero,
 *   else each policy's own cost. A descriptor `hits_addend` of 0 is Envoy's "check
 *   only": it spends nothing, and a request that spends nothing is never refused, so
 *   the answer is OK without touching the store. More units than a policy's burst
 *   can never pass: OVER_LIMIT at once, nothing spent.
 * - A fail-closed policy with the store down (`unavailable`) fails the whole call
 *   with gRPC UNAVAILABLE, so Envoy applies its own `failure_mode_deny`.
 * - Shadow policies are checked and logged but never make a descriptor OVER_LIMIT.
 *
 * @example
 * const rl = await createRateLimiter({ policies });
 * const rls = await startEnvoyRls({ limiter: rl.limiter, port: 8181, host: "127.0.0.1", log });
 * // envoy.yaml: rate_limit_service → grpc cluster at 127.0.0.1:<rls.port>, domain = policies.domain
 * await rls.close();
 */
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Logger } from "@casebook/infra/http/logger";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { maxCost } from "../domain/algorithm.ts";
import {
  type Descriptor,
  type DescriptorKey,
  descriptor,
  isDescriptorKey,
  MAX_RAW_VALUE_CHARS,
} from "../domain/descriptors.ts";
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
import type { LimiterMetrics } from "./limiter-metrics.ts";

// ---------------------------------------------------------------- wire contract

/** Where the .proto files live and which one declares the service. */
export const ENVOY_RLS_PROTO = {
  includeDir: fileURLToPath(new URL("./proto", import.meta.url)),
  file: "envoy/service/ratelimit/v3/rls.proto",
} as const;

/**
 * proto-loader options shared by the server and test clients: snake_case field names
 * as on the wire, uint64 as strings (no precision loss), enums by name, and absent
 * fields left undefined so an unset `hits_addend` wrapper is told apart from 0.
 */
export const ENVOY_RLS_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: false,
};

export type EnvoyCode = "UNKNOWN" | "OK" | "OVER_LIMIT";
export type EnvoyUnit = "SECOND" | "MINUTE" | "HOUR" | "DAY" | "MONTH" | "YEAR";

/** A decoded request descriptor; uint64 `hits_addend` arrives as a decimal string. */
export interface RlsDescriptor {
  entries?: { key?: string; value?: string }[];
  hits_addend?: { value?: string } | null;
}

/** A decoded RateLimitRequest (absent fields are undefined). */
export interface RlsRequest {
  domain?: string;
  descriptors?: RlsDescriptor[];
  hits_addend?: number;
}

export interface RlsDescriptorStatus {
  code: EnvoyCode;
  current_limit?: { name: string; requests_per_unit: number; unit: EnvoyUnit };
  limit_remaining?: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

export interface RlsResponse {
  overall_code: EnvoyCode;
  statuses: RlsDescriptorStatus[];
  response_headers_to_add: { key: string; value: string }[];
}

/**
 * The RateLimitService definition, loaded from our .proto files.
 *
 * @example
 * const Client = grpc.makeGenericClientConstructor(loadEnvoyRlsService(), "RateLimitService");
 */
export function loadEnvoyRlsService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync(ENVOY_RLS_PROTO.file, {
    ...ENVOY_RLS_LOADER_OPTIONS,
    includeDirs: [ENVOY_RLS_PROTO.includeDir],
  });
  const service = definition["envoy.service.ratelimit.v3.RateLimitService"];
  if (service === undefined || "format" in service)
    throw new Error("RateLimitService missing from rls.proto");
  return service as unknown as grpc.ServiceDefinition;
}

// ---------------------------------------------------------------- bounds and options

/** Bounds on one request: Envoy sends a handful of short descriptors; more is abuse or a bug. */
export const envoyRlsBounds = {
  maxDescriptors: 64,
  maxEntriesPerDescriptor: 16,
  maxKeyChars: 256,
  maxValueChars: MAX_RAW_VALUE_CHARS,
} as const;

/**
 * Envoy's built-in descriptor keys and what they mean here. `remote_address` and
 * `masked_remote_address` (a CIDR) are the client address; `generic_key` (a fixed
 * label set on an Envoy route) names a route group; `header_match` (a label set when
 * request headers match) classes the client, like a plan. Any Envoy action can
 * instead set `descriptor_key` to one of our keys directly.
 */
export const ENVOY_KEY_ALIASES: Readonly<Record<string, DescriptorKey>> = {
  remote_address: "ip",
  masked_remote_address: "ip",
  generic_key: "route",
  header_match: "plan",
};

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

// ---------------------------------------------------------------- request parsing

interface ParsedDescriptor {
  /** Undefined when the descriptor cannot match any policy (unknown or repeated key, empty value). */
  readonly descriptor: Descriptor | undefined;
  readonly keys: ReadonlySet<DescriptorKey>;
  /** Units to spend; undefined = each policy's own cost; 0 = check only. */
  readonly hits: number | undefined;
  readonly why?: string;
}

interface ParsedRequest {
  readonly domain: string;
  readonly descriptors: readonly ParsedDescriptor[];
}

type Parse = { ok: true; request: ParsedRequest } | { ok: false; problem: string };

function parseHits(raw: RlsDescriptor): { hits?: number; problem?: string } {
  const wrapper = raw.hits_addend;
  if (wrapper === undefined || wrapper === null) return {};
  const text = wrapper.value ?? "0";
  // uint64 arrives as a decimal string; past 2^53 precision is lost, but any such count
  // is far above every policy's burst and is refused the same.
  const hits = Number(text);
  if (!/^\d+$/.test(text) || !Number.isFinite(hits))
    return { problem: `hits_addend ${text} is not a uint64` };
  return { hits };
}

function parseDescriptor(
  raw: RlsDescriptor,
  path: string,
  aliases: Readonly<Record<string, DescriptorKey>>,
  requestHits: number | undefined,
): ParsedDescriptor | string {
  const { maxEntriesPerDescriptor, maxKeyChars, maxValueChars } = envoyRlsBounds;
  const entries = raw.entries ?? [];
  if (entries.length === 0 || entries.length > maxEntriesPerDescriptor)
    return `${path}.entries: must hold 1..${maxEntriesPerDescriptor} entries`;
  const hits = parseHits(raw);
  if (hits.problem) return `${path}.${hits.problem}`;
  const values: Partial<Record<DescriptorKey, string>> = {};
  let why: string | undefined;
  for (const [j, entry] of entries.entries()) {
    const key = entry.key ?? "";
    const value = entry.value ?? "";
    if (key === "" || key.length > maxKeyChars)
      return `${path}.entries[${j}].key: must be 1..${maxKeyChars} chars`;
    if (value.length > maxValueChars)
      return `${path}.entries[${j}].value: longer than ${maxValueChars} chars`;
    const ours = Object.hasOwn(aliases, key) ? aliases[key] : isDescriptorKey(key) ? key : undefined;
    if (ours === undefined) why ??= `unknown key ${key}`;
    else if (value === "") why ??= `empty value for ${key}`;
    else if (values[ours] !== undefined) why ??= `${ours} given twice`;
    else values[ours] = value;
  }
  const keys = new Set(Object.keys(values) as DescriptorKey[]);
  return { descriptor: why ? undefined : descriptor(values), keys, hits: hits.hits ?? requestHits, why };
}

/**
 * Validates a decoded RateLimitRequest; `problem` names the field at fault
 * (answered as INVALID_ARGUMENT).
 *
 * @example
 * parseRlsRequest({ domain: "casebook", descriptors: [{ entries: [{ key: "remote_address", value: "10.0.0.1" }] }] }, ENVOY_KEY_ALIASES);
 */
export function parseRlsRequest(raw: RlsRequest, aliases: Readonly<Record<string, DescriptorKey>>): Parse {
  const domain = raw.domain ?? "";
  if (domain === "") return { ok: false, problem: "domain: must not be empty" };
  const list = raw.descriptors ?? [];
  if (list.length === 0 || list.length > envoyRlsBounds.maxDescriptors)
    return { ok: false, problem: `descriptors: must hold 1..${envoyRlsBounds.maxDescriptors} descriptors` };
  const requestHits = raw.hits_addend ? raw.hits_addend : undefined;
  const descriptors: ParsedDescriptor[] = [];
  for (const [i, item] of list.entries()) {
    const parsed = parseDescriptor(item, `descriptors[${i}]`, aliases, requestHits);
    if (typeof parsed === "string") return { ok: false, problem: parsed };
    descriptors.push(parsed);
  }
  return { ok: true, request: { domain, descriptors } };
}

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

// ---------------------------------------------------------------- the server

/** Bytes that do not decode as a RateLimitRequest: answered INVALID_ARGUMENT, not INTERNAL. */
class Undecodable {
  readonly problem: string;
  constructor(problem: string) {
    this.problem = problem;
  }
}

function withLenientDecoding(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const method = service.ShouldRateLimit;
  if (!method) throw new Error("RateLimitService has no ShouldRateLimit method");
  return {
    ShouldRateLimit: {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (error) {
          return new Undecodable(error instanceof Error ? error.message : String(error));
        }
      },
    },
  };
}

function bindAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Starts the Envoy RLS gRPC server (plaintext HTTP/2, as Envoy's `envoy_grpc` cluster
 * speaks by default).
 *
 * @example
 * const rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log });
 * console.log(`envoy rate_limit_service → 127.0.0.1:${rls.port}`);
 * await rls.close();
 */
export async function startEnvoyRls(options: EnvoyRlsOptions): Promise<EnvoyRls> {
  for (const [envoyKey, ours] of Object.entries(options.keyAliases ?? {}))
    if (!isDescriptorKey(ours))
      throw new TypeError(`keyAliases.${envoyKey}: ${ours} is not a descriptor key`);
  const maxMessageBytes = options.maxMessageBytes ?? envoyRlsDefaults.maxMessageBytes;
  const server = new grpc.Server({
    "grpc.max_receive_message_length": maxMessageBytes,
    "grpc.max_send_message_length": maxMessageBytes,
    "grpc.max_concurrent_streams": options.maxConcurrentStreams ?? envoyRlsDefaults.maxConcurrentStreams,
  });
  const handler: grpc.handleUnaryCall<RlsRequest | Undecodable, RlsResponse> = (call, callback) => {
    const request = call.request;
    if (request instanceof Undecodable) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: `not a RateLimitRequest: ${request.problem}` });
      return;
    }
    answerRlsRequest(request, options).then(
      (out) => ("error" in out ? callback(out.error) : callback(null, out.response)),
      (error: unknown) => {
        options.log.error({ err: error }, "envoy rate limit call failed");
        callback({ code: grpc.status.INTERNAL, details: "rate limit decision failed; see the service log" });
      },
    );
  };
  server.addService(withLenientDecoding(loadEnvoyRlsService()), { ShouldRateLimit: handler });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      bindAddress(options.host, options.port),
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    );
  });
  const drainTimeoutMs = options.drainTimeoutMs ?? envoyRlsDefaults.drainTimeoutMs;
  return { port, close: () => shutdown(server, drainTimeoutMs) };
}

function shutdown(server: grpc.Server, drainTimeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, drainTimeoutMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

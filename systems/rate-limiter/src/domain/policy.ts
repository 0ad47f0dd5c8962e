/**
 * The policy model: which limits apply to a request, with which counter keys, and
 * how to send them to Redis. A config (already parsed from YAML/JSON) declares
 * policies, envoy-ratelimit style: each matches on request descriptors, names its
 * algorithm and parameters, renders a key from descriptor values, and says what to
 * do when the limiter is down (`failMode`) or whether it only observes (`shadow`).
 * Several policies applying at once are the layers of RL-16 (per-IP volume,
 * per-API-key plan quota, per-user-per-route business rule).
 *
 * `parsePolicyConfig` validates everything and throws ONE error listing every
 * problem by path; `resolveLimits` turns (config, descriptor) into the ordered
 * limits with concrete keys, grouped by (shadow, hash slot, algorithm) so each group
 * is one atomic all-or-nothing script call (RL-08/RL-10).
 *
 * @example
 * const config = parsePolicyConfig({
 *   policies: [
 *     { name: "per-ip", key: "ip:{ip}", limit: { algorithm: "token-bucket", capacity: 100, ratePerS: 50 } },
 *     { name: "per-user-route", match: { route: "/v1/pay*" }, key: "user:{user}:route:{route}",
 *       hashTag: "user:{user}", failMode: "closed",
 *       limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 } },
 *   ],
 * });
 * const plan = resolveLimits(config, descriptor({ ip: "203.0.113.9", user: "42", route: "/v1/pay" }));
 * plan.groups.length; // 2 (different slots); plan.failMode === "closed"
 */

import { keySlot } from "@casebook/kit/cluster-slot";
import { rateLimitErrors } from "../errors.ts";
import {
  type AlgorithmName,
  algorithmNames,
  type Limit,
  limitBounds,
  maxCost,
  validateLimit,
} from "./algorithm.ts";
import {
  type Descriptor,
  type DescriptorKey,
  descriptorValue,
  isDescriptorKey,
  type KeyTemplate,
  MAX_VALUE_CHARS,
  MIN_VALUE_CHARS,
  matchesValue,
  parseKeyTemplate,
  parseValueMatcher,
  renderKeyTemplate,
  type ValueMatcher,
} from "./descriptors.ts";
import { MAX_SUB_BUCKETS, type SubBucketPicker, splitLimit, subBucketKey } from "./sub-buckets.ts";

export type { AlgorithmName, Limit } from "./algorithm.ts";

export type FailMode = "open" | "closed";

/** Bounds on a config, each checked by validation. */
export const MAX_POLICIES = 256;
export const MAX_NAME_CHARS = 64;
export const MAX_COST = 1_000_000;
export const MAX_COST_ROUTES = 256;
/** Bound on a full Redis key, in characters (asserted when rendering). */
export const MAX_KEY_CHARS = 1_024;

/** Short algorithm codes inside keys: a policy switching algorithm never reads the old state shape. */
const ALGORITHM_CODE: Record<AlgorithmName, string> = {
  "token-bucket": "tb",
  "fixed-window": "fw",
  "sliding-window-log": "swl",
  "sliding-window-counter": "swc",
  "leaky-bucket": "lb",
  gcra: "gcra",
};

/** A validated policy, ready to resolve. */
export interface Policy {
  readonly name: string;
  /** Position in the config: the order limits are spent in. */
  readonly index: number;
  readonly match: ReadonlyMap<DescriptorKey, ValueMatcher>;
  readonly key: KeyTemplate;
  readonly hashTag: KeyTemplate | undefined;
  readonly limit: Limit;
  readonly failMode: FailMode;
  readonly shadow: boolean;
  readonly cost: { readonly default: number; readonly routes: ReadonlyMap<string, number> };
  readonly subBuckets: number;
}

/** A validated config. */
export interface PolicyConfig {
  /** First part of every key (envoy's domain): several configs can share one Redis. */
  readonly domain: string;
  /** Bound on one escaped descriptor value inside a key, in characters. */
  readonly maxValueChars: number;
  readonly policies: readonly Policy[];
}

// ---------------------------------------------------------------- validation

type Issues = string[];
type Obj = Record<string, unknown>;

const NAME = /^[a-z0-9][a-z0-9._-]*$/;

function isObj(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function unknownFields(obj: Obj, allowed: readonly string[], path: string, issues: Issues): void {
  for (const field of Object.keys(obj)) {
    if (!allowed.includes(field))
      issues.push(`${path}.${field}: unknown field (allowed: ${allowed.join(", ")})`);
  }
}

function int(obj: Obj, field: string, path: string, min: number, max: number, issues: Issues): number {
  const value = obj[field];
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    issues.push(`${path}.${field}: must be an integer in [${min}, ${max}]`);
    return min;
  }
  return value;
}

function rate(obj: Obj, path: string, issues: Issues): number {
  const { minRatePerS, maxRatePerS } = limitBounds;
  const value = obj.ratePerS;
  if (typeof value !== "number" || !(value >= minRatePerS && value <= maxRatePerS)) {
    issues.push(`${path}.ratePerS: must be a number in [${minRatePerS}, ${maxRatePerS}]`);
    return 1;
  }
  return value;
}

const UNIT_MS: Record<string, number> = { second: 1_000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

function parseWindow(
  obj: Obj,
  path: string,
  maxLimit: number,
  issues: Issues,
): { limit: number; windowMs: number } {
  // envoy's `requests_per_unit` + `unit` is accepted as a shorthand for limit + windowMs.
  if ("requestsPerUnit" in obj || "unit" in obj) {
    const unitMs = UNIT_MS[String(obj.unit)];
    if (unitMs === undefined) issues.push(`${path}.unit: must be one of ${Object.keys(UNIT_MS).join(", ")}`);
    return { limit: int(obj, "requestsPerUnit", path, 1, maxLimit, issues), windowMs: unitMs ?? 1_000 };
  }
  return {
    limit: int(obj, "limit", path, 1, maxLimit, issues),
    windowMs: int(obj, "windowMs", path, 1, limitBounds.maxWindowMs, issues),
  };
}

/** Field by field, collecting every problem; the algorithm module's own checks run last. */
function parseLimitFields(raw: Obj, path: string, issues: Issues): Limit | undefined {
  const { maxUnits, maxLogLimit } = limitBounds;
  const algorithm = raw.algorithm;
  switch (algorithm) {
    case "token-bucket":
      unknownFields(raw, ["algorithm", "capacity", "ratePerS"], path, issues);
      return {
        algorithm,
        capacity: int(raw, "capacity", path, 1, maxUnits, issues),
        ratePerS: rate(raw, path, issues),
      };
    case "leaky-bucket":
      unknownFields(raw, ["algorithm", "queueCapacity", "ratePerS"], path, issues);
      return {
        algorithm,
        queueCapacity: int(raw, "queueCapacity", path, 1, maxUnits, issues),
        ratePerS: rate(raw, path, issues),
      };
    case "gcra":
      unknownFields(raw, ["algorithm", "burst", "ratePerS"], path, issues);
      return {
        algorithm,
        burst: int(raw, "burst", path, 1, maxUnits, issues),
        ratePerS: rate(raw, path, issues),
      };
    case "fixed-window":
    case "sliding-window-log":
    case "sliding-window-counter":
      unknownFields(raw, ["algorithm", "limit", "windowMs", "requestsPerUnit", "unit"], path, issues);
      // The sliding log stores one entry per unit: its limit has the tighter bound.
      return {
        algorithm,
        ...parseWindow(raw, path, algorithm === "sliding-window-log" ? maxLogLimit : maxUnits, issues),
      };
    default:
      issues.push(`${path}.algorithm: must be one of ${algorithmNames.join(", ")}`);
      return undefined;
  }
}

function parseLimit(raw: unknown, path: string, issues: Issues): Limit | undefined {
  if (!isObj(raw)) {
    issues.push(`${path}: must be an object with an algorithm and its parameters`);
    return undefined;
  }
  const before = issues.length;
  const limit = parseLimitFields(raw, path, issues);
  if (limit === undefined || issues.length > before) return limit;
  // Cross-field rules (e.g. a full refill slower than limitBounds.maxFullRefillS) live in algorithm.ts.
  const problem = limitProblem(limit);
  if (problem) issues.push(`${path}: ${problem}`);
  return limit;
}

function limitProblem(limit: Limit): string | undefined {
  try {
    validateLimit(limit);
    return undefined;
  } catch (error) {
    return error instanceof RangeError ? error.message : String(error);
  }
}

function parseMatch(raw: unknown, path: string, issues: Issues): Map<DescriptorKey, ValueMatcher> {
  const match = new Map<DescriptorKey, ValueMatcher>();
  if (raw === undefined) return match;
  if (!isObj(raw)) {
    issues.push(`${path}: must map descriptor keys to "*", "prefix*", "value" or a list of values`);
    return match;
  }
  for (const [key, value] of Object.entries(raw)) {
    if (!isDescriptorKey(key)) {
      issues.push(`${path}.${key}: not a descriptor key`);
      continue;
    }
    const parsed = parseValueMatcher(value);
    if (parsed.ok) match.set(key, parsed.matcher);
    else issues.push(`${path}.${key}: ${parsed.error}`);
  }
  return match;
}

function parseTemplate(raw: unknown, path: string, issues: Issues): KeyTemplate | undefined {
  if (typeof raw !== "string") {
    issues.push(`${path}: must be a key template such as "user:{user}"`);
    return undefined;
  }
  const parsed = parseKeyTemplate(raw);
  if (!parsed.ok) issues.push(`${path}: ${parsed.error}`);
  return parsed.ok ? parsed.template : undefined;
}

function parseCost(raw: unknown, path: string, issues: Issues): Policy["cost"] {
  if (raw === undefined) return { default: 1, routes: new Map() };
  if (typeof raw === "number") {
    if (!Number.isInteger(raw) || raw < 1 || raw > MAX_COST)
      issues.push(`${path}: must be an integer in [1, ${MAX_COST}]`);
    return { default: raw, routes: new Map() };
  }
  if (!isObj(raw)) {
    issues.push(`${path}: must be a positive integer or { default, routes: { "<route>": cost } }`);
    return { default: 1, routes: new Map() };
  }
  unknownFields(raw, ["default", "routes"], path, issues);
  const base = raw.default === undefined ? 1 : int(raw, "default", path, 1, MAX_COST, issues);
  const routes = new Map<string, number>();
  const rawRoutes = raw.routes ?? {};
  if (!isObj(rawRoutes) || Object.keys(rawRoutes).length > MAX_COST_ROUTES) {
    issues.push(`${path}.routes: must map at most ${MAX_COST_ROUTES} routes to costs`);
    return { default: base, routes };
  }
  for (const route of Object.keys(rawRoutes)) {
    routes.set(route, int(rawRoutes, route, `${path}.routes`, 1, MAX_COST, issues));
  }
  return { default: base, routes };
}

const POLICY_FIELDS = [
  "name",
  "match",
  "key",
  "hashTag",
  "limit",
  "failMode",
  "shadow",
  "cost",
  "subBuckets",
];

function parsePolicy(
  raw: unknown,
  index: number,
  defaultFailMode: FailMode,
  issues: Issues,
): Policy | undefined {
  const path = `policies[${index}]`;
  if (!isObj(raw)) {
    issues.push(`${path}: must be an object`);
    return undefined;
  }
  unknownFields(raw, POLICY_FIELDS, path, issues);
  const name = raw.name;
  if (typeof name !== "string" || name.length > MAX_NAME_CHARS || !NAME.test(name)) {
    issues.push(`${path}.name: must match ${NAME} and be at most ${MAX_NAME_CHARS} characters`);
  }
  const failMode = raw.failMode ?? defaultFailMode;
  if (failMode !== "open" && failMode !== "closed")
    issues.push(`${path}.failMode: must be "open" or "closed"`);
  if (raw.shadow !== undefined && typeof raw.shadow !== "boolean")
    issues.push(`${path}.shadow: must be a boolean`);
  const subBuckets =
    raw.subBuckets === undefined ? 1 : int(raw, "subBuckets", path, 1, MAX_SUB_BUCKETS, issues);
  const key = parseTemplate(raw.key, `${path}.key`, issues);
  const hashTag =
    raw.hashTag === undefined ? undefined : parseTemplate(raw.hashTag, `${path}.hashTag`, issues);
  const limit = parseLimit(raw.limit, `${path}.limit`, issues);
  // Parsed even when the key or limit is broken, so their problems are reported in the same pass.
  const match = parseMatch(raw.match, `${path}.match`, issues);
  const cost = parseCost(raw.cost, `${path}.cost`, issues);
  const policy: Policy | undefined =
    key === undefined || limit === undefined
      ? undefined
      : {
          name: String(name),
          index,
          match,
          key,
          hashTag,
          limit,
          failMode: failMode === "closed" ? "closed" : "open",
          shadow: raw.shadow === true,
          cost,
          subBuckets,
        };
  if (policy) checkPolicyCoherence(policy, path, issues);
  return policy;
}

/** Rules across fields: each catches a config that would silently misbehave. */
function checkPolicyCoherence(policy: Policy, path: string, issues: Issues): void {
  if (policy.hashTag) {
    const missing = policy.hashTag.keys.filter((k) => !policy.key.keys.includes(k));
    // A tag value outside the key would split one counter across slots or merge distinct ones.
    if (missing.length > 0)
      issues.push(`${path}.hashTag: uses {${missing.join("}, {")}} which the key does not`);
    // RL-09 exists to spread a hot key over shards; one tag would pin every sub-bucket to one slot.
    if (policy.subBuckets > 1)
      issues.push(
        `${path}.subBuckets: cannot be combined with hashTag (all sub-buckets would share one slot)`,
      );
  }
  const smallest = Math.floor(maxCost(policy.limit) / policy.subBuckets);
  if (smallest < 1) {
    issues.push(
      `${path}.subBuckets: ${policy.subBuckets} sub-buckets need a quota of at least ${policy.subBuckets}`,
    );
    return;
  }
  // The last sub-bucket has the smallest share; if it is valid, all are.
  const sub = splitLimit(policy.limit, policy.subBuckets - 1, policy.subBuckets);
  const problem = policy.subBuckets > 1 ? limitProblem(sub) : undefined;
  if (problem) issues.push(`${path}.subBuckets: one sub-bucket's limit is invalid: ${problem}`);
  const maxRequestCost = Math.max(policy.cost.default, ...policy.cost.routes.values());
  if (maxRequestCost > maxCost(sub)) {
    issues.push(
      `${path}.cost: ${maxRequestCost} exceeds the quota of one bucket (${maxCost(sub)}); every request would be refused`,
    );
  }
}

/**
 * Validates a parsed config object; returns the config or every problem found, each
 * prefixed with its path (`policies[2].limit.capacity: must be an integer in [1, …]`).
 *
 * @example
 * const result = validatePolicyConfig({ policies: [] });
 * if (!result.ok) console.error(result.issues.join("\n"));
 */
export function validatePolicyConfig(
  raw: unknown,
): { ok: true; config: PolicyConfig } | { ok: false; issues: string[] } {
  const issues: Issues = [];
  if (!isObj(raw)) return { ok: false, issues: ["(root): must be an object with `policies`"] };
  unknownFields(raw, ["domain", "maxValueChars", "defaults", "policies"], "(root)", issues);
  const domain = raw.domain ?? "rl";
  if (typeof domain !== "string" || domain.length > MAX_NAME_CHARS || !NAME.test(domain)) {
    issues.push(`domain: must match ${NAME} and be at most ${MAX_NAME_CHARS} characters`);
  }
  const maxValueChars =
    raw.maxValueChars === undefined
      ? 64
      : int(raw, "maxValueChars", "(root)", MIN_VALUE_CHARS, MAX_VALUE_CHARS, issues);
  const defaults = raw.defaults ?? {};
  let defaultFailMode: FailMode = "open";
  if (!isObj(defaults)) issues.push("defaults: must be an object");
  else {
    unknownFields(defaults, ["failMode"], "defaults", issues);
    if (defaults.failMode === "closed") defaultFailMode = "closed";
    else if (defaults.failMode !== undefined && defaults.failMode !== "open") {
      issues.push('defaults.failMode: must be "open" or "closed"');
    }
  }
  const policies = parsePolicies(raw.policies, defaultFailMode, issues);
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, config: { domain: String(domain), maxValueChars, policies } };
}

function parsePolicies(raw: unknown, defaultFailMode: FailMode, issues: Issues): Policy[] {
  if (!Array.isArray(raw) || raw.length > MAX_POLICIES) {
    issues.push(`policies: must be a list of at most ${MAX_POLICIES} policies`);
    return [];
  }
  const policies: Policy[] = [];
  const seen = new Set<string>();
  raw.forEach((item, index) => {
    const policy = parsePolicy(item, index, defaultFailMode, issues);
    if (!policy) return;
    // Names are in keys and in RateLimit-Policy headers: two policies must never share one.
    if (seen.has(policy.name)) issues.push(`policies[${index}].name: "${policy.name}" is already used`);
    seen.add(policy.name);
    policies.push(policy);
  });
  return policies;
}

/**
 * Validates and returns the config, or throws RATELIMIT_POLICY_INVALID whose message
 * lists every problem and whose `fields.issues` holds them one per entry.
 *
 * @example
 * parsePolicyConfig(yaml.parse(text)); // throws: "policies[2].limit.capacity: must be an integer in [1, 1000000000]"
 */
export function parsePolicyConfig(raw: unknown): PolicyConfig {
  const result = validatePolicyConfig(raw);
  if (result.ok) return result.config;
  throw rateLimitErrors.create("RATELIMIT_POLICY_INVALID", {
    detail: `rate-limit policy config is invalid:\n${result.issues.join("\n")}`,
    fields: { issues: result.issues },
  });
}

// ---------------------------------------------------------------- limit arithmetic

/**
 * The quota a client can spend at once and the window that quota refers to, in whole
 * seconds (min 1): what RateLimit-Policy advertises as `q` and `w`.
 *
 * @example
 * quotaOf({ algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }); // { quota: 5, windowS: 10 }
 */
export function quotaOf(limit: Limit): { quota: number; windowS: number } {
  const bucket = bucketEquivalent(limit);
  const windowS =
    "windowMs" in limit ? Math.ceil(limit.windowMs / 1_000) : Math.ceil(bucket.capacity / bucket.ratePerS);
  return { quota: bucket.capacity, windowS: Math.max(1, windowS) };
}

/**
 * The token bucket that admits the same burst and long-run rate as `limit`: what the
 * in-process fail-open limiter (RL-11) enforces whatever the policy's algorithm.
 *
 * @example
 * bucketEquivalent({ algorithm: "fixed-window", limit: 60, windowMs: 60_000 }); // { capacity: 60, ratePerS: 1 }
 */
export function bucketEquivalent(limit: Limit): { capacity: number; ratePerS: number } {
  switch (limit.algorithm) {
    case "token-bucket":
      return { capacity: limit.capacity, ratePerS: limit.ratePerS };
    case "leaky-bucket":
      return { capacity: limit.queueCapacity, ratePerS: limit.ratePerS };
    case "gcra":
      return { capacity: limit.burst, ratePerS: limit.ratePerS };
    default:
      return { capacity: limit.limit, ratePerS: (limit.limit * 1_000) / limit.windowMs };
  }
}

/**
 * The cost of one request under `policy`: its per-route cost when the route has one.
 *
 * @example
 * costOf(policy, descriptor({ route: "/v1/search" })); // 5 with cost: { routes: { "/v1/search": 5 } }
 */
export function costOf(policy: Policy, d: Descriptor): number {
  const route = descriptorValue(d, "route");
  return (route === undefined ? undefined : policy.cost.routes.get(route)) ?? policy.cost.default;
}

/**
 * True when every `match` entry and every key placeholder is satisfied by `d`.
 *
 * @example
 * policyApplies(policy, descriptor({ user: "42" }));
 */
export function policyApplies(policy: Policy, d: Descriptor): boolean {
  for (const [key, matcher] of policy.match)
    if (!matchesValue(matcher, descriptorValue(d, key))) return false;
  for (const key of policy.key.keys) if (descriptorValue(d, key) === undefined) return false;
  return true;
}

/** A policy that did not apply only because the request lacks descriptors it needs. */
export interface SkippedPolicy {
  readonly policy: string;
  /** Stable reason code: the request lacks descriptors the policy's `key` or `match` reads. */
  readonly reason: "descriptor-missing";
  /** The descriptor keys the request lacks (match keys first, then the key template's). */
  readonly missing: readonly DescriptorKey[];
}

/**
 * The policies (all, or the `names` given) a request would have been checked against had it
 * carried every descriptor they read. Skipping such a policy admits the request without
 * that limit, so the answer says so: a caller that forgot `user` learns it from the first
 * answer instead of from an unlimited abuser. A policy whose `match` refuses a value the
 * request does carry is not skipped: it does not apply, by design.
 *
 * @example
 * skippedPolicies(config, descriptor({ ip: "10.0.0.1" })); // [{ policy: "per-user", reason: "descriptor-missing", missing: ["user"] }]
 */
export function skippedPolicies(
  config: PolicyConfig,
  d: Descriptor,
  names?: readonly string[],
): SkippedPolicy[] {
  const skipped: SkippedPolicy[] = [];
  for (const policy of config.policies) {
    if (names !== undefined && !names.includes(policy.name)) continue;
    const missing = new Set<DescriptorKey>();
    let excluded = false;
    for (const [key, matcher] of policy.match) {
      const value = descriptorValue(d, key);
      if (value === undefined) missing.add(key);
      else if (!matchesValue(matcher, value)) excluded = true;
    }
    for (const key of policy.key.keys) if (descriptorValue(d, key) === undefined) missing.add(key);
    if (!excluded && missing.size > 0)
      skipped.push({ policy: policy.name, reason: "descriptor-missing", missing: [...missing] });
  }
  return skipped;
}

/**
 * The names in `names` that no policy in force has (an HTTP check naming one is refused:
 * checking nothing would admit the request with no limit applied).
 *
 * @example
 * unknownPolicyNames(config, ["per-user", "per-usr"]); // ["per-usr"]
 */
export function unknownPolicyNames(config: PolicyConfig, names: readonly string[]): string[] {
  const known = new Set(config.policies.map((policy) => policy.name));
  return [...new Set(names.filter((name) => !known.has(name)))];
}

// ---------------------------------------------------------------- resolution

/** One limit that applies to a request, with its concrete Redis key. */
export interface ResolvedLimit {
  readonly policy: string;
  /** The policy's position in the config: limits are spent in this order. */
  readonly index: number;
  readonly algorithm: AlgorithmName;
  /** Parameters for THIS key: a sub-bucket's share when the policy is split (RL-09). */
  readonly limit: Limit;
  /** The whole policy's quota and window in seconds, for RateLimit-Policy headers. */
  readonly quota: { readonly quota: number; readonly windowS: number };
  readonly key: string;
  /** Redis Cluster slot of `key` (0..16383). */
  readonly slot: number;
  readonly cost: number;
  /** Observe only: counted and logged, never refuses. */
  readonly shadow: boolean;
  readonly failMode: FailMode;
  /** Set when the policy is split: which sub-bucket this key is, and the key without the index. */
  readonly subBucket:
    | { readonly index: number; readonly count: number; readonly baseKey: string }
    | undefined;
}

/**
 * Limits that can be checked in ONE atomic script call: same algorithm (one script),
 * same slot (RL-08), same shadow flag. Shadow limits never share a call with
 * enforcing ones: the script is all-or-nothing, so a refusing shadow limit would
 * otherwise block the request it must only observe.
 */
export interface LimitGroup {
  readonly slot: number;
  readonly algorithm: AlgorithmName;
  readonly shadow: boolean;
  readonly limits: readonly ResolvedLimit[];
}

export interface Resolution {
  /** Every applicable limit, in config order (then sub-bucket order): deterministic. */
  readonly limits: readonly ResolvedLimit[];
  /**
   * Groups in spending order: enforcing groups by their first policy's position, then
   * shadow groups. Spend group by group; when one refuses, refund the groups already
   * spent (RL-10's caveat: between two calls a concurrent request may see the spent
   * tokens). Shadow groups come last so a caller can skip them for refused requests.
   */
  readonly groups: readonly LimitGroup[];
  /** "closed" when any enforcing limit is fail-closed (RL-12): the strictest wins. */
  readonly failMode: FailMode;
}

export interface ResolveOptions {
  /** Chooses the sub-bucket of a split policy; required when a matching policy has subBuckets > 1. */
  readonly picker?: SubBucketPicker;
}

function renderBaseKey(config: PolicyConfig, policy: Policy, d: Descriptor): string | undefined {
  const options = { maxValueChars: config.maxValueChars };
  const body = renderKeyTemplate(policy.key, d, options);
  if (body === undefined) return undefined;
  const prefix = `${config.domain}:${policy.name}:${ALGORITHM_CODE[policy.limit.algorithm]}`;
  if (!policy.hashTag) return `${prefix}:${body}`;
  const tag = renderKeyTemplate(policy.hashTag, d, options);
  // Validation guarantees the tag's placeholders are a subset of the key's, so it renders too.
  if (tag === undefined) return undefined;
  return `${prefix}:{${tag}}:${body}`;
}

function resolveOne(
  config: PolicyConfig,
  policy: Policy,
  d: Descriptor,
  options: ResolveOptions,
): ResolvedLimit | undefined {
  if (!policyApplies(policy, d)) return undefined;
  const baseKey = renderBaseKey(config, policy, d);
  if (baseKey === undefined) return undefined;
  let key = baseKey;
  let limit = policy.limit;
  let subBucket: ResolvedLimit["subBucket"];
  if (policy.subBuckets > 1) {
    if (!options.picker)
      throw new TypeError(`policy ${policy.name} is split into sub-buckets: pass a picker`);
    const index = options.picker.pick(baseKey, policy.subBuckets);
    if (!Number.isInteger(index) || index < 0 || index >= policy.subBuckets) {
      throw new RangeError(`picker returned ${index} for ${policy.subBuckets} sub-buckets`);
    }
    key = subBucketKey(baseKey, index);
    limit = splitLimit(policy.limit, index, policy.subBuckets);
    subBucket = { index, count: policy.subBuckets, baseKey };
  }
  if (key.length > MAX_KEY_CHARS)
    throw new RangeError(`key of policy ${policy.name} exceeds ${MAX_KEY_CHARS} chars`);
  return {
    policy: policy.name,
    index: policy.index,
    algorithm: policy.limit.algorithm,
    limit,
    quota: quotaOf(policy.limit),
    key,
    slot: keySlot(key),
    cost: costOf(policy, d),
    shadow: policy.shadow,
    failMode: policy.failMode,
    subBucket,
  };
}

/**
 * Groups limits by (shadow, slot, algorithm) in spending order: see `Resolution.groups`.
 * A group never holds more than `limitBounds.maxKeysPerCall` keys (the scripts' bound);
 * a larger one is cut into consecutive calls, which then follow the refund rule too.
 *
 * @example
 * groupLimits(resolution.limits).map((g) => g.limits.map((l) => l.key));
 */
export function groupLimits(limits: readonly ResolvedLimit[]): LimitGroup[] {
  // The common case, one limit: one group, nothing to sort.
  if (limits.length === 1) {
    const only = limits[0]!;
    return [{ slot: only.slot, algorithm: only.algorithm, shadow: only.shadow, limits }];
  }
  const byId = new Map<
    string,
    { slot: number; algorithm: AlgorithmName; shadow: boolean; limits: ResolvedLimit[] }
  >();
  for (const limit of limits) {
    const id = `${limit.shadow ? 1 : 0}|${limit.slot}|${limit.algorithm}`;
    let group = byId.get(id);
    if (!group) {
      group = { slot: limit.slot, algorithm: limit.algorithm, shadow: limit.shadow, limits: [] };
      byId.set(id, group);
    }
    group.limits.push(limit);
  }
  // Map keeps insertion order, and `limits` arrive in config order: each group sits at its
  // first limit's position. A stable sort then moves shadow groups behind enforcing ones.
  const ordered = [...byId.values()].sort((a, b) => Number(a.shadow) - Number(b.shadow));
  const max = limitBounds.maxKeysPerCall;
  return ordered.flatMap((group) =>
    Array.from({ length: Math.ceil(group.limits.length / max) }, (_, i) => ({
      ...group,
      limits: group.limits.slice(i * max, (i + 1) * max),
    })),
  );
}

/**
 * The limits that apply to a request described by `d`, with concrete keys, in a
 * deterministic order, grouped for atomic script calls.
 *
 * @example
 * const { groups, failMode } = resolveLimits(config, descriptor({ ip, user, route }), { picker });
 * for (const group of groups) await store.spend(group); // one <algorithm>-n.lua call per group
 */
export function resolveLimits(config: PolicyConfig, d: Descriptor, options: ResolveOptions = {}): Resolution {
  const limits: ResolvedLimit[] = [];
  for (const policy of config.policies) {
    const resolved = resolveOne(config, policy, d, options);
    if (resolved) limits.push(resolved);
  }
  const failMode: FailMode = limits.some((l) => !l.shadow && l.failMode === "closed") ? "closed" : "open";
  return { limits, groups: groupLimits(limits), failMode };
}

import { rateLimitErrors } from "../errors.ts";
import { algorithmNames, type Limit, limitBounds, maxCost, validateLimit } from "./algorithm.ts";
import {
  type DescriptorKey,
  isDescriptorKey,
  type KeyTemplate,
  MAX_VALUE_CHARS,
  MIN_VALUE_CHARS,
  parseKeyTemplate,
  parseValueMatcher,
  type ValueMatcher,
} from "./descriptors.ts";
import { MAX_SUB_BUCKETS, splitLimit } from "./sub-buckets.ts";

export type { AlgorithmName, Limit } from "./algorithm.ts";

export type FailMode = "open" | "closed";

/** Bounds on a config, each checked by validation. */
export const MAX_POLICIES = 256;
export const MAX_NAME_CHARS = 64;
export const MAX_COST = 1_000_000;
export const MAX_COST_ROUTES = 256;
/** Bound on a full Redis key, in characters (asserted when rendering). */
export const MAX_KEY_CHARS = 1_024;

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

/**
 * The policy model at request time: which limits of a parsed config (policy-config.ts)
 * apply to a request, with which counter keys, and how to send them to Redis.
 * `resolveLimits` turns (config, descriptor) into the ordered limits with concrete keys,
 * grouped by (shadow, hash slot, algorithm) so each group is one atomic all-or-nothing
 * script call (RL-08/RL-10). The parsing API is re-exported here, so importers of the
 * model keep one entry point.
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
import { type AlgorithmName, type Limit, limitBounds } from "./algorithm.ts";
import {
  type Descriptor,
  type DescriptorKey,
  descriptorValue,
  matchesValue,
  renderKeyTemplate,
} from "./descriptors.ts";
import { type FailMode, MAX_KEY_CHARS, type Policy, type PolicyConfig } from "./policy-config.ts";
import { type SubBucketPicker, splitLimit, subBucketKey } from "./sub-buckets.ts";

export * from "./policy-config.ts";

/** Short algorithm codes inside keys: a policy switching algorithm never reads the old state shape. */
const ALGORITHM_CODE: Record<AlgorithmName, string> = {
  "token-bucket": "tb",
  "fixed-window": "fw",
  "sliding-window-log": "swl",
  "sliding-window-counter": "swc",
  "leaky-bucket": "lb",
  gcra: "gcra",
};

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

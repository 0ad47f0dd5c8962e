/**
 * Error codes of the cache's pure mechanisms: eviction policies, the sketch, traces, the
 * hash ring. Kept in their own registry until the lead merges the cache's registries; the
 * server maps a configuration error to a failed start and the others to replies.
 *
 * @example
 * throw policyErrors.create("CACHE_POLICY_CONFIG_INVALID", {
 *   fields: { field: "maxEntries", expected: "an integer >= 1", got: 0 },
 * });
 */
import { defineErrors } from "@casebook/kit/errors";

export const policyErrors = defineErrors({
  CACHE_POLICY_CONFIG_INVALID: {
    status: 400,
    message: "A cache policy option is out of range; `field` names it and `expected` says what it accepts.",
  },
  CACHE_WEIGHT_INVALID: {
    status: 400,
    message: "An entry's weight must be an integer >= 0: its size in bytes, or 1 to count entries.",
  },
  CACHE_TRACE_INVALID: {
    status: 400,
    message: "A trace holds request keys as integers in [0, maxKeyId]; `field` names what is out of range.",
  },
  CACHE_RING_EMPTY: {
    status: 503,
    message: "The hash ring has no nodes, so no key has an owner; add a node first.",
  },
  CACHE_RING_NODE_EXISTS: {
    status: 409,
    message: "This node is already on the ring; remove it first to change its virtual node count.",
  },
  CACHE_RING_NODE_UNKNOWN: {
    status: 404,
    message: "This node is not on the ring; `node` names it.",
  },
});

export type PolicyErrorCode = keyof typeof policyErrors.specs;

/**
 * Throws CACHE_POLICY_CONFIG_INVALID unless `value` is an integer in [min, max].
 *
 * @example
 * requireInteger("maxEntries", options.maxEntries, 1, 2 ** 31);
 */
export function requireInteger(field: string, value: number, min: number, max: number): void {
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    throw policyErrors.create("CACHE_POLICY_CONFIG_INVALID", {
      fields: { field, expected: `an integer in [${min}, ${max}]`, got: String(value) },
    });
  }
}

/**
 * Throws CACHE_POLICY_CONFIG_INVALID unless `value` is a number in [min, max].
 *
 * @example
 * requireNumber("windowFraction", 0.01, 0, 1);
 */
export function requireNumber(field: string, value: number, min: number, max: number): void {
  if (!(typeof value === "number" && value >= min && value <= max)) {
    throw policyErrors.create("CACHE_POLICY_CONFIG_INVALID", {
      fields: { field, expected: `a number in [${min}, ${max}]`, got: String(value) },
    });
  }
}

/**
 * Throws CACHE_WEIGHT_INVALID unless `weight` is a safe integer >= 0 (integers, so the
 * running total never drifts the way a sum of fractions does).
 *
 * @example
 * requireWeight("user:1", 1_024);
 */
export function requireWeight(key: unknown, weight: number): void {
  if (!(Number.isSafeInteger(weight) && weight >= 0)) {
    throw policyErrors.create("CACHE_WEIGHT_INVALID", {
      fields: { key: String(key), weight: String(weight) },
    });
  }
}

/** JSON schemas of the public API: validated at the edge, published in /openapi.json. */
import { DESCRIPTOR_KEYS, MAX_RAW_VALUE_CHARS } from "../domain/descriptors.ts";
import { MAX_COST } from "../domain/policy.ts";

const descriptorProperties = Object.fromEntries(
  DESCRIPTOR_KEYS.map((key) => [key, { type: "string", minLength: 1, maxLength: MAX_RAW_VALUE_CHARS }]),
);

export const checkBody = {
  type: "object",
  additionalProperties: false,
  required: ["descriptors"],
  properties: {
    descriptors: {
      type: "object",
      additionalProperties: false,
      minProperties: 1,
      properties: descriptorProperties,
      description: "Who and what is asking: ip, apiKey, plan, user, route, method.",
    },
    cost: {
      type: "integer",
      minimum: 1,
      maximum: MAX_COST,
      description: "Units this request spends (weighted cost).",
    },
    policies: {
      type: "array",
      maxItems: 64,
      items: { type: "string", minLength: 1, maxLength: 64 },
      description: "Check only these policies; default every policy that matches.",
    },
  },
} as const;

const limitResult = {
  type: "object",
  properties: {
    policy: { type: "string" },
    allowed: { type: "boolean" },
    shadow: { type: "boolean" },
    shadowRefused: { type: "boolean" },
    quota: { type: "number" },
    windowS: { type: "number" },
    remaining: { type: "number" },
    resetMs: { type: "number" },
    retryAfterMs: { type: "number" },
  },
} as const;

export const checkResponse = {
  type: "object",
  properties: {
    allowed: { type: "boolean" },
    outcome: { type: "string", enum: ["allowed", "limited", "unavailable"] },
    remaining: { type: ["number", "null"], description: "null when no limit applied" },
    resetMs: { type: "number" },
    retryAfterMs: { type: "number" },
    delayMs: { type: "number", description: "Shaping (leaky bucket): wait this long before proceeding." },
    degraded: { type: "boolean", description: "Decided by the fallback: the store is failing." },
    failMode: { type: "string", enum: ["open", "closed"] },
    headers: { type: "object", additionalProperties: { type: "string" } },
    limits: { type: "array", items: limitResult },
    skipped: {
      type: "array",
      description:
        "Policies not applied because the request lacks a descriptor they read: they limited nothing.",
      items: {
        type: "object",
        required: ["policy", "reason", "missing"],
        properties: {
          policy: { type: "string" },
          reason: { type: "string", enum: ["descriptor-missing"] },
          missing: { type: "array", items: { type: "string", enum: [...DESCRIPTOR_KEYS] } },
        },
      },
    },
  },
} as const;

/** GET /v1/policies — the policies in force (after the last valid hot reload). */
import type { FastifyInstance } from "fastify";
import { algorithmNames } from "../domain/algorithm.ts";
import type { ValueMatcher } from "../domain/descriptors.ts";
import type { Limiter } from "../domain/limiter.ts";

/** The matcher as written in the config: "*", "prefix*", a value or a list. */
function matcherText(matcher: ValueMatcher): string | readonly string[] {
  if (matcher.kind === "present") return "*";
  if (matcher.kind === "prefix") return `${matcher.prefix}*`;
  return matcher.values.length === 1 ? matcher.values[0]! : matcher.values;
}

const matcherSchema = {
  anyOf: [{ type: "string" }, { type: "array", items: { type: "string" } }],
  description: '"*" (present), "prefix*", a value or a list of values',
} as const;

/** The full shape: Fastify serializes with it, so an undeclared field would be dropped. */
const policiesView = {
  type: "object",
  required: ["domain", "policies"],
  additionalProperties: false,
  properties: {
    domain: { type: "string" },
    policies: {
      type: "array",
      items: {
        type: "object",
        required: ["name", "match", "key", "hashTag", "limit", "failMode", "shadow", "cost", "subBuckets"],
        additionalProperties: false,
        properties: {
          name: { type: "string" },
          match: { type: "object", additionalProperties: matcherSchema },
          key: { type: "string", description: "The counter key template, e.g. ip:{ip}" },
          hashTag: { type: ["string", "null"] },
          // Each algorithm has its own parameters: all of them are kept (additionalProperties).
          limit: {
            type: "object",
            required: ["algorithm"],
            additionalProperties: true,
            properties: { algorithm: { type: "string", enum: [...algorithmNames] } },
          },
          failMode: { type: "string", enum: ["open", "closed"] },
          shadow: { type: "boolean" },
          cost: {
            type: "object",
            required: ["default", "routes"],
            additionalProperties: false,
            properties: {
              default: { type: "number" },
              routes: { type: "object", additionalProperties: { type: "number" } },
            },
          },
          subBuckets: { type: "integer" },
        },
      },
    },
  },
} as const;

export function registerPoliciesRoute(app: FastifyInstance, limiter: Limiter): void {
  app.get(
    "/v1/policies",
    { schema: { summary: "The policies in force", tags: ["rate limit"], response: { 200: policiesView } } },
    async () => {
      const config = limiter.config;
      return {
        domain: config.domain,
        policies: config.policies.map((policy) => ({
          name: policy.name,
          match: Object.fromEntries([...policy.match].map(([key, m]) => [key, matcherText(m)])),
          key: policy.key.source,
          hashTag: policy.hashTag?.source ?? null,
          limit: policy.limit,
          failMode: policy.failMode,
          shadow: policy.shadow,
          cost: { default: policy.cost.default, routes: Object.fromEntries(policy.cost.routes) },
          subBuckets: policy.subBuckets,
        })),
      };
    },
  );
}

/** GET /v1/policies — the policies in force (after the last valid hot reload). */
import type { FastifyInstance } from "fastify";
import type { ValueMatcher } from "../domain/descriptors.ts";
import type { Limiter } from "../domain/limiter.ts";

/** The matcher as written in the config: "*", "prefix*", a value or a list. */
function matcherText(matcher: ValueMatcher): string | readonly string[] {
  if (matcher.kind === "present") return "*";
  if (matcher.kind === "prefix") return `${matcher.prefix}*`;
  return matcher.values.length === 1 ? matcher.values[0]! : matcher.values;
}

export function registerPoliciesRoute(app: FastifyInstance, limiter: Limiter): void {
  app.get(
    "/v1/policies",
    { schema: { summary: "The policies in force", tags: ["rate limit"] } },
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

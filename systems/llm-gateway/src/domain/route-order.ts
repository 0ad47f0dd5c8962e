/**
 * The order in which a request tries the deployments of a model (LG-09): tier by tier as
 * configured (the same model elsewhere → a smaller model → the own endpoint), and inside a
 * tier the least loaded first — equal deployments of one model share the load, ties taken in
 * turn so an idle gateway still spreads its requests. Deployments whose breaker is open are
 * not left out here: the caller skips them and learns when they may be tried again.
 *
 * @example
 * orderDeployments([[east, west], [mini]], (d) => (d === east ? 3 : 0), 0); // [west, east, mini]
 */
import type { Deployment } from "./model-catalog.ts";

export interface Candidate {
  readonly deployment: Deployment;
  /** 0 = the primary tier; above it every candidate is a fallback. */
  readonly tier: number;
}

export function orderDeployments(
  tiers: readonly (readonly Deployment[])[],
  inFlightOf: (deployment: Deployment) => number,
  turn: number,
): Candidate[] {
  return tiers.flatMap((tier, index) => {
    const start = turn % tier.length;
    const rotated = [...tier.slice(start), ...tier.slice(0, start)];
    // Array.prototype.sort is stable: equal loads keep the rotated order.
    return rotated
      .map((deployment) => ({ deployment, load: inFlightOf(deployment) }))
      .sort((a, b) => a.load - b.load)
      .map(({ deployment }) => ({ deployment, tier: index }));
  });
}

/** How a served deployment differs from the request's primary: none, another destination, or another model (LG-10). */
export type FallbackKind = "none" | "destination" | "model";

export function fallbackKind(primary: Deployment, served: Deployment, tier: number): FallbackKind {
  if (served.upstreamModel !== primary.upstreamModel) return "model";
  // Inside the primary tier another deployment of the same model is load balancing, not a fallback.
  if (tier > 0) return "destination";
  return "none";
}

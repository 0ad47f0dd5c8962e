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
  // On every request: plain loops, no intermediate arrays (tiers hold a handful of deployments).
  const order: Candidate[] = [];
  const loads: number[] = [];
  for (let tier = 0; tier < tiers.length; tier++) {
    const deployments = tiers[tier] as readonly Deployment[];
    const first = order.length;
    const start = turn % deployments.length;
    for (let i = 0; i < deployments.length; i++) {
      const deployment = deployments[(start + i) % deployments.length] as Deployment;
      const load = inFlightOf(deployment);
      // Insertion by load, after every equal one: ties keep the rotated order.
      let at = order.length;
      while (at > first && (loads[at - 1] as number) > load) at--;
      order.splice(at, 0, { deployment, tier });
      loads.splice(at, 0, load);
    }
  }
  return order;
}

/** How a served deployment differs from the request's primary: none, another destination, or another model (LG-10). */
export type FallbackKind = "none" | "destination" | "model";

export function fallbackKind(primary: Deployment, served: Deployment, tier: number): FallbackKind {
  if (served.upstreamModel !== primary.upstreamModel) return "model";
  // Inside the primary tier another deployment of the same model is load balancing, not a fallback.
  if (tier > 0) return "destination";
  return "none";
}

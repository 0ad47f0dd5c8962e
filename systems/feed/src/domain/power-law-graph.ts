/**
 * The synthetic graph the seed command builds (issue 20): a power law of followers — the
 * author of rank r has `topShare × users / r^alpha` followers — so one machine sees all three
 * tiers: the top authors are followed by 20–30 % of users (pull), some by thousands
 * (push-active), the long tail by a handful (push). Pure: the seed's SQL takes these counts.
 *
 * @example
 * followersOfRank(1, { users: 200_000, topShare: 0.25, alpha: 1 }); // 50 000
 * followersOfRank(100, { users: 200_000, topShare: 0.25, alpha: 1 }); // 500
 */

export interface PowerLawShape {
  readonly users: number;
  /** Share of users following the top author. */
  readonly topShare: number;
  /** The exponent: 1 is Zipf. */
  readonly alpha: number;
}

export function followersOfRank(rank: number, shape: PowerLawShape): number {
  if (!(Number.isInteger(rank) && rank >= 1)) throw new RangeError("rank is an integer >= 1");
  return Math.floor((shape.topShare * shape.users) / rank ** shape.alpha);
}

/** How many authors have at least `minFollowers`: the ranks the seed writes edges for. */
export function authorsAbove(minFollowers: number, shape: PowerLawShape): number {
  return Math.max(
    0,
    Math.floor(((shape.topShare * shape.users) / Math.max(1, minFollowers)) ** (1 / shape.alpha)),
  );
}

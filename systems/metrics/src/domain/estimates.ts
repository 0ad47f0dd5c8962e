/**
 * The design text's arithmetic, as functions a test reproduces (MT-01, MT-10, MT-14): the write rate
 * the whole design rests on, and the cardinality product that decides whether the index fits.
 *
 * @example
 * pointsPerSecond({ hosts: 100_000, metricsPerHost: 200, intervalS: 10 }); // 2_000_000
 * seriesCount([5_000, 50, 5]);                                             // 1_250_000
 * pointsPerTier({ retentionS: 7 * 86_400, resolutionS: 1 });                 // 604_800 (MT-10)
 */

/** MT-01: points arriving per second when every host sends every metric once per interval. */
export function pointsPerSecond(fleet: { hosts: number; metricsPerHost: number; intervalS: number }): number {
  return (fleet.hosts * fleet.metricsPerHost) / fleet.intervalS;
}

/** MT-13/14: series of one metric = the product of its labels' value counts. */
export function seriesCount(valueCounts: readonly number[]): number {
  return valueCounts.reduce((product, n) => product * n, 1);
}

/** Series a metric would add past a ceiling: what MT-16's limit refuses instead of storing. */
export function seriesOverCeiling(valueCounts: readonly number[], ceiling: number): number {
  return Math.max(0, seriesCount(valueCounts) - ceiling);
}

/** MT-10: points one series holds in a tier kept `retentionS` at one point per `resolutionS`. */
export function pointsPerTier(tier: { retentionS: number; resolutionS: number }): number {
  return tier.retentionS / tier.resolutionS;
}

/**
 * RL-14 multi-region quota split. A global quota (1000/min) is split into integer
 * shares per region (600/400); each region enforces its share locally, with no
 * cross-region call on the request path, and a periodic rebalancer (this pure
 * function) moves share toward demand: targets are proportional to smoothed demand
 * (EWMA), with a floor per region so an idle region keeps a minimum share.
 *
 * What holds, precisely. Model: each region counts in windows aligned with the
 * rebalancing interval, and applies a newly published split within the interval
 * after publication, enforcing either its old or its new share meanwhile.
 *
 * - Σ shares + held = quota after every step (`held` is share in transit, below).
 * - With synchronous application the regions admit ≤ quota in every interval:
 *   no overshoot; the only error is the shortfall the design text names (a busy
 *   region is refused while an idle one's share sits unused).
 * - With asynchronous application a region may still enforce its OLD share while
 *   another already enforces its NEW, larger one: admitted ≤ Σ max(old_i, new_i) =
 *   quota + `moved`. The rebalancer hands over at once only share its donor left
 *   UNUSED in the last interval (`moved` ≤ Σ donors' unused share); share a donor was
 *   using is `held` for one interval (taken now, granted next step, once every
 *   region runs the smaller share), which costs no overshoot. Hence: the global
 *   overshoot in any interval is at most the unused share of the regions giving
 *   share away in the previous interval, the idle region's unused share.
 *
 * @example
 * let state = splitQuota(1000, { "us-east": 600, "eu-west": 400 });
 * const step = rebalance(state, { "us-east": { used: 600, demand: 1500 }, "eu-west": { used: 0, demand: 0 } },
 *   { quota: 1000, minShare: 50, smoothing: 0.5 });
 * step.state.shares; // us-east grows, eu-west shrinks toward its 50 floor
 * step.moved;        // ≤ 400: eu-west's unused share, the bound on next interval's overshoot
 */

/** Bound on regions in one split. */
export const MAX_REGIONS = 64;

export interface SplitState {
  /** What each region enforces per interval (integers). */
  readonly shares: Readonly<Record<string, number>>;
  /** Share taken from busy regions at the last step, granted at the next one. */
  readonly held: number;
  /** Smoothed demand per region (requests per interval), the rebalancer's memory. */
  readonly demand: Readonly<Record<string, number>>;
}

export interface IntervalUsage {
  /** Requests the region admitted in the last interval. */
  readonly used: number;
  /** Requests the region received (admitted + refused): the demand signal, since `used` is capped by the share. */
  readonly demand: number;
}

export interface RebalanceOptions {
  /** Global quota per interval. */
  readonly quota: number;
  /** Floor per region: an idle region keeps at least this share. */
  readonly minShare: number;
  /** EWMA weight of the newest interval, in (0, 1]; 1 = follow the last interval only. */
  readonly smoothing: number;
}

export interface RebalanceResult {
  readonly state: SplitState;
  /** Unused share handed over now: the bound on the next interval's global overshoot. */
  readonly moved: number;
  /** Share taken from regions that were using it; granted at the next step. */
  readonly reclaimed: number;
}

/**
 * Integers summing to `total`, proportional to `weights` (largest remainder; ties by
 * region name). All-zero weights split evenly.
 *
 * @example
 * apportion(10, { a: 1, b: 1, c: 1 }); // { a: 4, b: 3, c: 3 }
 */
export function apportion(total: number, weights: Readonly<Record<string, number>>): Record<string, number> {
  const regions = Object.keys(weights).sort();
  const weightSum = regions.reduce((sum, r) => sum + weights[r]!, 0);
  const exact = regions.map((r) =>
    weightSum > 0 ? (total * weights[r]!) / weightSum : total / regions.length,
  );
  const result: Record<string, number> = {};
  let given = 0;
  regions.forEach((r, i) => {
    result[r] = Math.floor(exact[i]!);
    given += result[r]!;
  });
  const byRemainder = regions
    .map((r, i) => ({ r, rest: exact[i]! - Math.floor(exact[i]!) }))
    .sort((a, b) => b.rest - a.rest || (a.r < b.r ? -1 : 1));
  for (let i = 0; given < total && i < byRemainder.length; i++, given++) result[byRemainder[i]!.r]! += 1;
  return result;
}

function checkOptions(options: RebalanceOptions, regionCount: number): void {
  const { quota, minShare, smoothing } = options;
  if (!Number.isInteger(quota) || quota < 1)
    throw new RangeError(`quota must be an integer >= 1, got ${quota}`);
  if (regionCount < 1 || regionCount > MAX_REGIONS)
    throw new RangeError(`need 1..${MAX_REGIONS} regions, got ${regionCount}`);
  if (!Number.isInteger(minShare) || minShare < 0 || minShare * regionCount > quota) {
    throw new RangeError(`minShare must be an integer with minShare × regions <= quota, got ${minShare}`);
  }
  if (!(smoothing > 0 && smoothing <= 1))
    throw new RangeError(`smoothing must be in (0, 1], got ${smoothing}`);
}

/**
 * The first split: `quota` apportioned by `weights` (e.g. the 600/400 of the text).
 *
 * @example
 * splitQuota(1000, { a: 3, b: 2 }).shares; // { a: 600, b: 400 }
 */
export function splitQuota(quota: number, weights: Readonly<Record<string, number>>): SplitState {
  const regions = Object.keys(weights);
  if (!Number.isInteger(quota) || quota < 1)
    throw new RangeError(`quota must be an integer >= 1, got ${quota}`);
  if (regions.length < 1 || regions.length > MAX_REGIONS)
    throw new RangeError(`need 1..${MAX_REGIONS} regions`);
  if (!regions.every((r) => Number.isFinite(weights[r]) && weights[r]! >= 0))
    throw new RangeError("weights must be >= 0");
  const shares = apportion(quota, weights);
  return { shares, held: 0, demand: Object.fromEntries(regions.map((r) => [r, shares[r]!])) };
}

function targetsFor(
  state: SplitState,
  smoothed: Record<string, number>,
  options: RebalanceOptions,
): Record<string, number> {
  const regions = Object.keys(state.shares).sort();
  const total = regions.reduce((sum, r) => sum + smoothed[r]!, 0);
  if (total === 0) {
    // Nobody asked for anything: nothing to learn, keep the split (and hand back any held share).
    const back = apportion(state.held, state.shares);
    return Object.fromEntries(regions.map((r) => [r, state.shares[r]! + back[r]!]));
  }
  // Water-filling: proportional to demand, except that a region whose proportional share
  // falls under the floor is pinned at the floor and the rest re-split among the others.
  // Each pass pins at least one region or stops, so it runs at most `regions` passes.
  const pinned = new Set<string>();
  for (let pass = 0; pass < regions.length; pass++) {
    const free = regions.filter((r) => !pinned.has(r));
    const budget = options.quota - options.minShare * pinned.size;
    const weight = free.reduce((sum, r) => sum + smoothed[r]!, 0);
    const under = free.filter((r) => weight === 0 || (budget * smoothed[r]!) / weight < options.minShare);
    if (under.length === 0 || under.length === free.length) break;
    for (const r of under) pinned.add(r);
  }
  const free = regions.filter((r) => !pinned.has(r));
  const rest = apportion(
    options.quota - options.minShare * pinned.size,
    Object.fromEntries(free.map((r) => [r, smoothed[r]!])),
  );
  return Object.fromEntries(regions.map((r) => [r, pinned.has(r) ? options.minShare : rest[r]!]));
}

/**
 * One rebalancing step from the last interval's usage per region. Pure: the caller
 * publishes `result.state.shares` and keeps `result.state` for the next step.
 *
 * @example
 * const { state, moved } = rebalance(state0, usageByRegion, { quota: 1000, minShare: 50, smoothing: 0.5 });
 */
export function rebalance(
  state: SplitState,
  usage: Readonly<Record<string, IntervalUsage>>,
  options: RebalanceOptions,
): RebalanceResult {
  const regions = Object.keys(state.shares).sort();
  checkOptions(options, regions.length);
  const sum = regions.reduce((s, r) => s + state.shares[r]!, 0) + state.held;
  if (sum !== options.quota)
    throw new RangeError(`shares + held = ${sum}, quota = ${options.quota}: start again with splitQuota`);
  const missing = regions.filter((r) => usage[r] === undefined);
  if (missing.length > 0 || Object.keys(usage).length !== regions.length) {
    throw new RangeError(`usage must cover exactly the regions ${regions.join(", ")}`);
  }
  const smoothed: Record<string, number> = {};
  for (const r of regions) {
    const demand = Math.max(0, usage[r]!.demand);
    smoothed[r] = options.smoothing * demand + (1 - options.smoothing) * (state.demand[r] ?? demand);
  }
  const targets = targetsFor(state, smoothed, options);
  const shares: Record<string, number> = {};
  const deficits: Record<string, number> = {};
  let unusedMoved = 0;
  let reclaimed = 0;
  for (const r of regions) {
    const share = state.shares[r]!;
    const target = targets[r]!;
    shares[r] = Math.min(share, target);
    deficits[r] = Math.max(0, target - share);
    const surplus = Math.max(0, share - target);
    // Only share the donor left unused may change hands at once: it bounds the overshoot.
    const unused = Math.max(0, share - Math.max(0, usage[r]!.used));
    unusedMoved += Math.min(surplus, unused);
    reclaimed += surplus - Math.min(surplus, unused);
  }
  const grantable = unusedMoved + state.held;
  const grants = grantByDeficit(grantable, deficits);
  for (const r of regions) shares[r]! += grants[r]!;
  const result: SplitState = { shares, held: reclaimed, demand: smoothed };
  const after = regions.reduce((s, r) => s + shares[r]!, 0) + reclaimed;
  if (after !== options.quota) throw new Error(`rebalance broke the sum: ${after} != ${options.quota}`);
  return { state: result, moved: unusedMoved, reclaimed };
}

function grantByDeficit(amount: number, deficits: Record<string, number>): Record<string, number> {
  const totalDeficit = Object.values(deficits).reduce((s, d) => s + d, 0);
  // Σ deficits = amount + reclaimed ≥ amount; largest remainder never rounds a grant past its deficit.
  if (amount > totalDeficit) throw new Error(`cannot grant ${amount} against deficits of ${totalDeficit}`);
  if (amount === 0) return Object.fromEntries(Object.keys(deficits).map((r) => [r, 0]));
  const grants = apportion(amount, deficits);
  for (const [r, grant] of Object.entries(grants)) {
    if (grant > deficits[r]!) throw new Error(`grant ${grant} to ${r} exceeds its deficit ${deficits[r]}`);
  }
  return grants;
}

// ---------------------------------------------------------------- simulation

export interface QuotaSplitSimulation {
  readonly initial: SplitState;
  readonly options: RebalanceOptions;
  /** Requests each region receives per interval, one record per interval. */
  readonly demands: readonly Readonly<Record<string, number>>[];
  /**
   * "sync": every region switches shares at the interval boundary. "lagging": the
   * worst case of the model, each region enforces max(old, new) during the interval
   * after a publication (the grower already grew, the shrinker has not yet shrunk).
   */
  readonly application: "sync" | "lagging";
}

export interface IntervalRow {
  readonly interval: number;
  /** Limit each region enforced during the interval. */
  readonly enforced: Readonly<Record<string, number>>;
  readonly admitted: Readonly<Record<string, number>>;
  readonly admittedTotal: number;
  /** Overshoot allowed this interval by the stated bound: the share moved at the last step. */
  readonly overshootBound: number;
  /** Split published at the end of the interval. */
  readonly shares: Readonly<Record<string, number>>;
}

/** Bound on simulated intervals. */
export const MAX_SIMULATED_INTERVALS = 10_000;

/**
 * Runs the rebalancer against a demand trace, one rebalance per interval.
 *
 * @example
 * simulateQuotaSplit({ initial, options, application: "lagging",
 *   demands: Array(6).fill({ a: 1500, b: 0 }) }).map((row) => row.admittedTotal);
 */
export function simulateQuotaSplit(sim: QuotaSplitSimulation): IntervalRow[] {
  if (sim.demands.length > MAX_SIMULATED_INTERVALS)
    throw new RangeError(`at most ${MAX_SIMULATED_INTERVALS} intervals`);
  const rows: IntervalRow[] = [];
  let state = sim.initial;
  let previous = sim.initial.shares;
  let bound = 0;
  sim.demands.forEach((demand, interval) => {
    const regions = Object.keys(state.shares).sort();
    const enforced: Record<string, number> = {};
    const admitted: Record<string, number> = {};
    const usage: Record<string, IntervalUsage> = {};
    for (const r of regions) {
      enforced[r] = sim.application === "sync" ? state.shares[r]! : Math.max(previous[r]!, state.shares[r]!);
      const asked = Math.max(0, demand[r] ?? 0);
      admitted[r] = Math.min(asked, enforced[r]!);
      usage[r] = { used: admitted[r]!, demand: asked };
    }
    const admittedTotal = regions.reduce((s, r) => s + admitted[r]!, 0);
    const step = rebalance(state, usage, sim.options);
    rows.push({
      interval,
      enforced,
      admitted,
      admittedTotal,
      overshootBound: bound,
      shares: step.state.shares,
    });
    previous = state.shares;
    state = step.state;
    bound = step.moved;
  });
  return rows;
}

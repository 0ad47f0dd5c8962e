/**
 * RL-14, the request path of one region: how a region enforces its share of a
 * multi-region quota using nothing but its OWN Redis. One hash per (policy, subject)
 * holds both the share the rebalancer published and the region's current window:
 *
 *     shareUnits     share published by the rebalancer (absent: the static split's share)
 *     epoch          window number; the rebalancer's close starts the next one
 *     windowStartMs  when the window opened (the engine's clock)
 *     admitted       units admitted in the window  → `used` for the rebalancer
 *     refused        units refused in the window   → admitted + refused = `demand`
 *
 * A request is admitted when `admitted + cost ≤ share`, decided in one script that
 * reads the share in the same step: no cross-region call, no extra round trip, and no
 * in-process cache that could run a stale share (the share is as fresh as the region's
 * own Redis).
 *
 * Windows are the rebalancer's intervals, the model quota-split.ts proves its bound
 * in: the rebalancer CLOSES every region's window (returning its usage, opening the
 * next epoch with the share unchanged), computes the new split, then PUBLISHES each
 * region's share for that epoch (a compare-and-set on the epoch, so a late publish
 * never lands in a later window). Between close and publish a region runs its old
 * share, afterwards its new one: the "lagging" application of quota-split.ts, whose
 * overshoot is bounded by the share moved.
 *
 * If the rebalancer goes quiet (dead, or this region cut off from it) a window older
 * than `maxWindowMs` closes itself, so the region keeps serving its last share per
 * `maxWindowMs` on its own instead of refusing forever.
 *
 * Mirrored by src/store/scripts/region-quota/region-{spend,close,publish,read}-1.lua.
 *
 * @example
 * const limit = regionalLimitOf({ quota: 1_000, weights: { a: 600, b: 400 }, intervalMs: 60_000,
 *   minShare: 50, smoothing: 0.5 }, "a"); // staticShare 600
 * const d = decideRegional(undefined, 0, limit, 1); // allowed, remaining 599
 */
import {
  type IntervalUsage,
  type RebalanceOptions,
  type RebalanceResult,
  rebalance,
  type SplitState,
  splitQuota,
} from "./quota-split.ts";

/** A global quota per interval, split across regions (the text's 1000/min as 600/400). */
export interface MultiRegionQuota {
  /** Units admitted per interval, across all regions. */
  readonly quota: number;
  /** The first split (proportions); each region enforces its part until the rebalancer publishes. */
  readonly weights: Readonly<Record<string, number>>;
  /** The interval the quota is per, and the rebalancer's period: windows are these intervals. */
  readonly intervalMs: number;
  /** Floor per region: an idle region keeps at least this share. */
  readonly minShare: number;
  /** EWMA weight of the newest interval's demand, in (0, 1]. */
  readonly smoothing: number;
  /** A window the rebalancer has not closed for this long closes itself. Default 2 × intervalMs. */
  readonly maxWindowMs?: number;
}

/** What a region's request path needs to decide, all local. */
export interface RegionalLimit {
  /** The static split's share, enforced until the rebalancer publishes one. */
  readonly staticShare: number;
  /** When the rebalancer is expected to close the window (for retry-after). */
  readonly intervalMs: number;
  /** A window older than this closes itself (rebalancer quiet). */
  readonly maxWindowMs: number;
}

export interface RegionalState {
  /** Share published by the rebalancer; undefined until the first publish. */
  readonly shareUnits: number | undefined;
  readonly epoch: number;
  readonly windowStartMs: number;
  readonly admitted: number;
  readonly refused: number;
}

export interface RegionalDecision {
  readonly state: RegionalState;
  readonly allowed: boolean;
  /** The share in force: published, or the static one. */
  readonly shareUnits: number;
  readonly remaining: number;
  /** 0 when allowed; else until the window is expected to close. */
  readonly retryAfterMs: number;
  /**
   * PEXPIRE for the stored hash, or 0 to leave its expiry alone. A subject no rebalancer
   * tracks (nothing published) expires after `maxWindowMs` idle, when its window would
   * have closed anyway: it leaks nothing (RL-06). A tracked one is the rebalancer's to keep.
   */
  readonly ttlMs: number;
}

/** A closed window: what the region did in it, for the rebalancer. */
export interface ClosedWindow {
  /** The epoch that was closed (0 when the region had never been closed). */
  readonly epoch: number;
  /** The epoch now open: publish the new share for this one. */
  readonly nextEpoch: number;
  readonly used: number;
  readonly demand: number;
  /** How long the window was open (engine time); longer than an interval after a missed close. */
  readonly windowMs: number;
  /** Share the region enforced: published, or undefined for the static one. */
  readonly shareUnits: number | undefined;
}

function checkInteger(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min)
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
}

/**
 * The static shares of a quota (`splitQuota` of its weights), checked.
 *
 * @example
 * staticShares({ quota: 1_000, weights: { a: 3, b: 2 }, intervalMs: 60_000, minShare: 0, smoothing: 1 });
 * // { a: 600, b: 400 }
 */
export function staticShares(quota: MultiRegionQuota): Record<string, number> {
  checkInteger("intervalMs", quota.intervalMs, 1);
  const maxWindowMs = quota.maxWindowMs ?? 2 * quota.intervalMs;
  if (!Number.isSafeInteger(maxWindowMs) || maxWindowMs < quota.intervalMs)
    throw new RangeError(`maxWindowMs must be an integer >= intervalMs, got ${maxWindowMs}`);
  return { ...splitQuota(quota.quota, quota.weights).shares };
}

/**
 * The limit region `region` applies locally for `quota`.
 *
 * @example
 * regionalLimitOf(quota, "eu-west"); // { staticShare: 400, intervalMs: 60_000, maxWindowMs: 120_000 }
 */
export function regionalLimitOf(quota: MultiRegionQuota, region: string): RegionalLimit {
  const shares = staticShares(quota);
  const staticShare = shares[region];
  if (staticShare === undefined)
    throw new RangeError(`region ${region} is not in the split (${Object.keys(shares).join(", ")})`);
  return {
    staticShare,
    intervalMs: quota.intervalMs,
    maxWindowMs: quota.maxWindowMs ?? 2 * quota.intervalMs,
  };
}

function checkLimit(limit: RegionalLimit): void {
  checkInteger("staticShare", limit.staticShare, 0);
  checkInteger("intervalMs", limit.intervalMs, 1);
  checkInteger("maxWindowMs", limit.maxWindowMs, limit.intervalMs);
}

/** The window in force at `nowMs`: the stored one, or a fresh one when none or when it outlived maxWindowMs. */
function windowAt(state: RegionalState | undefined, nowMs: number, maxWindowMs: number): RegionalState {
  if (state === undefined) {
    return { shareUnits: undefined, epoch: 0, windowStartMs: nowMs, admitted: 0, refused: 0 };
  }
  // RL-05: elapsed is clamped at 0, so a clock stepping back never closes (reopens) a window.
  if (Math.max(0, nowMs - state.windowStartMs) < maxWindowMs) return state;
  return { ...state, windowStartMs: nowMs, admitted: 0, refused: 0 };
}

/**
 * Decides one request of `cost` units against the region's share. A refusal admits
 * nothing; it only counts `refused`, the demand signal the rebalancer needs (admitted
 * alone is capped by the share and would hide how busy the region is).
 *
 * @example
 * decideRegional({ shareUnits: 2, epoch: 3, windowStartMs: 0, admitted: 2, refused: 0 }, 10,
 *   { staticShare: 600, intervalMs: 1_000, maxWindowMs: 2_000 }, 1);
 * // refused, retryAfterMs 990, state.refused 1
 */
export function decideRegional(
  state: RegionalState | undefined,
  nowMs: number,
  limit: RegionalLimit,
  cost: number,
): RegionalDecision {
  checkLimit(limit);
  checkInteger("nowMs", nowMs, 0);
  checkInteger("cost", cost, 1);
  const window = windowAt(state, nowMs, limit.maxWindowMs);
  const shareUnits = window.shareUnits ?? limit.staticShare;
  const allowed = window.admitted + cost <= shareUnits;
  const next = allowed
    ? { ...window, admitted: window.admitted + cost }
    : { ...window, refused: window.refused + cost };
  // The rebalancer should close the window one interval after it opened; if it is late,
  // the window closes itself at maxWindowMs.
  const expectedCloseMs = window.windowStartMs + limit.intervalMs;
  const closeAtMs = nowMs < expectedCloseMs ? expectedCloseMs : window.windowStartMs + limit.maxWindowMs;
  return {
    state: next,
    allowed,
    shareUnits,
    remaining: Math.max(0, shareUnits - next.admitted),
    retryAfterMs: allowed ? 0 : Math.max(1, closeAtMs - nowMs),
    ttlMs: window.shareUnits === undefined ? limit.maxWindowMs : 0,
  };
}

/**
 * The rebalancer's close: reports the window and opens the next epoch with the share
 * unchanged (a new share arrives with `publishRegionalShare`).
 *
 * @example
 * closeRegionalWindow({ shareUnits: 600, epoch: 4, windowStartMs: 0, admitted: 600, refused: 900 }, 60_000);
 * // closed: { epoch: 4, nextEpoch: 5, used: 600, demand: 1500, windowMs: 60_000, shareUnits: 600 }
 */
export function closeRegionalWindow(
  state: RegionalState | undefined,
  nowMs: number,
): { state: RegionalState; closed: ClosedWindow } {
  checkInteger("nowMs", nowMs, 0);
  const epoch = state?.epoch ?? 0;
  const closed: ClosedWindow = {
    epoch,
    nextEpoch: epoch + 1,
    used: state?.admitted ?? 0,
    demand: (state?.admitted ?? 0) + (state?.refused ?? 0),
    windowMs: state === undefined ? 0 : Math.max(0, nowMs - state.windowStartMs),
    shareUnits: state?.shareUnits,
  };
  const next: RegionalState = {
    shareUnits: state?.shareUnits,
    epoch: epoch + 1,
    windowStartMs: nowMs,
    admitted: 0,
    refused: 0,
  };
  return { state: next, closed };
}

/**
 * Sets the share for window `epoch`, only while that window is still the open one:
 * a publish delayed past the next close must not overwrite a newer decision.
 *
 * @example
 * publishRegionalShare(state, 5, 900); // { applied: state.epoch === 5, state: … }
 */
export function publishRegionalShare(
  state: RegionalState | undefined,
  epoch: number,
  shareUnits: number,
): { state: RegionalState | undefined; applied: boolean } {
  checkInteger("epoch", epoch, 1);
  checkInteger("shareUnits", shareUnits, 0);
  if (state === undefined || state.epoch !== epoch) return { state, applied: false };
  return { state: { ...state, shareUnits }, applied: true };
}

/** The stored hash of `state` (integers as strings; no `shareUnits` field until published). */
export function regionalToStored(state: RegionalState): Record<string, string> {
  const fields: Record<string, string> = {
    epoch: String(state.epoch),
    windowStartMs: String(state.windowStartMs),
    admitted: String(state.admitted),
    refused: String(state.refused),
  };
  if (state.shareUnits !== undefined) fields["shareUnits"] = String(state.shareUnits);
  return fields;
}

/** Reads a stored hash back; undefined when the window fields are missing (no state yet). */
export function regionalFromStored(fields: Readonly<Record<string, string>>): RegionalState | undefined {
  if (fields["windowStartMs"] === undefined) return undefined;
  const read = (name: string) => {
    const value = Number(fields[name] ?? "0");
    if (!Number.isSafeInteger(value))
      throw new RangeError(`stored ${name} is not an integer: ${fields[name]}`);
    return value;
  };
  return {
    shareUnits: fields["shareUnits"] === undefined ? undefined : read("shareUnits"),
    epoch: read("epoch"),
    windowStartMs: read("windowStartMs"),
    admitted: read("admitted"),
    refused: read("refused"),
  };
}

// ------------------------------------------------------- rebalancing a reachable subset

/**
 * One rebalancing step over the regions the rebalancer could reach: the others are
 * FROZEN at their share (they keep enforcing it; nothing of theirs may move while
 * nobody can tell them), and the rest of the quota, with any share in transit, is
 * rebalanced among the reachable ones by quota-split's `rebalance`. Σ shares + held
 * stays = quota, and the overshoot bound (share moved ≤ reachable donors' unused share)
 * is quota-split's, unchanged. When the floors cannot fit in what the frozen regions
 * leave, the split is kept as it is (moved 0).
 *
 * @example
 * rebalanceReachable(state, { a: { used: 600, demand: 1500 } }, options); // b frozen at its share
 */
export function rebalanceReachable(
  state: SplitState,
  usage: Readonly<Record<string, IntervalUsage>>,
  options: RebalanceOptions,
): RebalanceResult {
  const regions = Object.keys(state.shares);
  const reachable = regions.filter((r) => usage[r] !== undefined);
  if (Object.keys(usage).length !== reachable.length)
    throw new RangeError(`usage names regions outside the split: ${Object.keys(usage).join(", ")}`);
  if (reachable.length === regions.length) return rebalance(state, usage, options);
  const frozen = regions.filter((r) => usage[r] === undefined);
  const frozenUnits = frozen.reduce((sum, r) => sum + state.shares[r]!, 0);
  const subQuota = options.quota - frozenUnits;
  const unchanged: RebalanceResult = { state, moved: 0, reclaimed: 0 };
  if (reachable.length === 0 || subQuota < 1 || options.minShare * reachable.length > subQuota)
    return unchanged;
  const pick = (record: Readonly<Record<string, number>>) =>
    Object.fromEntries(reachable.filter((r) => record[r] !== undefined).map((r) => [r, record[r]!]));
  const partial = rebalance(
    { shares: pick(state.shares), held: state.held, demand: pick(state.demand) },
    usage,
    { ...options, quota: subQuota },
  );
  const shares = { ...state.shares, ...partial.state.shares };
  const demand = { ...state.demand, ...partial.state.demand };
  return {
    state: { shares, held: partial.state.held, demand },
    moved: partial.moved,
    reclaimed: partial.reclaimed,
  };
}

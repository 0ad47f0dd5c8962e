/**
 * RL-14, the periodic rebalancer: the ONLY component that talks to several regions.
 * Each tick, for every tracked quota:
 *
 * 1. CLOSE the window in every region (one pipelined batch per region, all regions in
 *    parallel): each region reports what it admitted and refused, and opens the next
 *    epoch with its share unchanged.
 * 2. REBALANCE (quota-split.ts's pure `rebalance`) over the regions that answered; a
 *    region that did not is FROZEN at its last share (it keeps enforcing it, nothing
 *    of it moves), so Σ shares + held stays = quota, and it is retried next tick.
 * 3. PUBLISH decreases first, then the rest (compare-and-set on the epoch). If a
 *    decrease cannot be confirmed, nothing grows: the quota keeps its previous split
 *    (the region that failed may still run its larger share, so giving that share to
 *    another would double-spend it). A failed increase only leaves its region
 *    enforcing less than recorded, and is published again next tick.
 *
 * The split lives in memory; the regions hold what they enforce. A new rebalancer (a
 * restart) rebuilds the split from the shares the first close reports, so it needs
 * no store of its own. One rebalancer per quota: two would close each other's windows.
 *
 * Bound on overshoot (quota-split.ts): the units admitted across regions in the
 * interval closed at tick k are ≤ quota + the share moved at tick k − 1, the unused
 * share of the regions that gave share away — reported as `overshootBound`.
 *
 * @example
 * const rebalancer = new Rebalancer({ regions: [storeA, storeB], intervalMs: 5_000, clock: systemClock,
 *   quotas: [{ key: { policy: "plan", subject: "key:42" }, quota }] });
 * rebalancer.start();
 * // … on shutdown:
 * await rebalancer.stop();
 */
import type { Clock } from "@casebook/kit/clock";
import type { IntervalUsage, RebalanceResult, SplitState } from "../domain/quota-split.ts";
import { splitQuota } from "../domain/quota-split.ts";
import { type MultiRegionQuota, rebalanceReachable, staticShares } from "../domain/regional-limit.ts";
import type { QuotaKey, RegionalClose, RegionQuotaStore, ShareUpdate } from "../store/region-quota-store.ts";

/** Timers as a dependency, so tests fire ticks themselves. */
export interface Scheduler {
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's timers. */
export const timerScheduler: Scheduler = {
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface TrackedQuota {
  readonly key: QuotaKey;
  readonly quota: MultiRegionQuota;
}

/** Bound on quotas one rebalancer tracks (each costs one script call per region per tick). */
export const maxTrackedQuotas = 10_000;

export interface RebalancerOptions {
  /** One store per region, each connected to that region's Redis only. */
  readonly regions: readonly RegionQuotaStore[];
  readonly quotas: readonly TrackedQuota[];
  /** Tick period; every quota's `intervalMs` must equal it (the quota is per interval). */
  readonly intervalMs: number;
  readonly clock: Clock;
  readonly scheduler?: Scheduler;
  /** Stop after this many ticks (bounded runs: demos, drills). Default: until stop(). */
  readonly maxTicks?: number;
  readonly onTick?: (report: TickReport) => void;
  /** Receives what a tick could not handle (a region down is reported, not an error). */
  readonly onError?: (error: unknown) => void;
}

export type QuotaTickStatus = "rebalanced" | "partial" | "reverted" | "uninitialized";

/** One quota's tick. */
export interface QuotaTick {
  readonly key: QuotaKey;
  /**
   * rebalanced: all regions answered; partial: some were frozen; reverted: a decrease
   * was not confirmed, the split stays; uninitialized: a first tick missing a region.
   */
  readonly status: QuotaTickStatus;
  /** Closed windows of the regions that answered. */
  readonly closed: Readonly<Record<string, { used: number; demand: number; windowMs: number }>>;
  /** Regions that did not answer the close: frozen at their share this tick. */
  readonly skipped: readonly string[];
  /** Regions whose publish failed (their share is published again next tick). */
  readonly publishFailed: readonly string[];
  /** Σ used over the closed windows: the units admitted in the interval just closed. */
  readonly admittedTotal: number;
  /** Share moved at the previous tick: admittedTotal ≤ quota + overshootBound. */
  readonly overshootBound: number;
  readonly quota: number;
  /** Shares each region enforced in the closed interval (published or static). */
  readonly sharesBefore: Readonly<Record<string, number>>;
  /** The split after the tick. */
  readonly shares: Readonly<Record<string, number>>;
  readonly held: number;
  /** Unused share handed over now: the bound for the next interval. */
  readonly moved: number;
  readonly reclaimed: number;
}

export interface TickReport {
  readonly tick: number;
  readonly startedAtMs: number;
  readonly durationMs: number;
  readonly quotas: readonly QuotaTick[];
}

interface Tracked {
  split: SplitState;
  /** Share moved at the last committed tick (0 after a revert). */
  lastMoved: number;
}

interface Plan {
  readonly tracked: TrackedQuota;
  readonly closed: Map<string, RegionalClose>;
  readonly skipped: string[];
  readonly enforced: Record<string, number>;
  readonly publishFailed: string[];
  before?: SplitState;
  result?: RebalanceResult;
  reverted: boolean;
}

function checkOptions(options: RebalancerOptions): string[] {
  const names = options.regions.map((store) => store.region);
  if (names.length === 0 || new Set(names).size !== names.length)
    throw new RangeError(`regions must be non-empty with unique names, got ${names.join(", ")}`);
  if (options.quotas.length > maxTrackedQuotas)
    throw new RangeError(`at most ${maxTrackedQuotas} quotas per rebalancer, got ${options.quotas.length}`);
  if (!Number.isSafeInteger(options.intervalMs) || options.intervalMs < 1)
    throw new RangeError(`intervalMs must be an integer >= 1, got ${options.intervalMs}`);
  for (const { key, quota } of options.quotas) {
    const where = `${key.policy}:${key.subject}`;
    const shares = staticShares(quota);
    const regions = Object.keys(shares).sort();
    if (regions.join() !== [...names].sort().join())
      throw new RangeError(`${where}: weights name ${regions.join(", ")}, regions are ${names.join(", ")}`);
    if (quota.intervalMs !== options.intervalMs)
      throw new RangeError(
        `${where}: intervalMs ${quota.intervalMs} != the rebalancer's ${options.intervalMs}`,
      );
  }
  return names;
}

/** The split a fresh rebalancer starts from: what the regions enforce, with any shortfall held. */
function splitFromEnforced(quota: number, enforced: Readonly<Record<string, number>>): SplitState {
  const total = Object.values(enforced).reduce((sum, share) => sum + share, 0);
  // More than the quota is enforced only if the quota itself was lowered: re-split it.
  if (total > quota) return splitQuota(quota, enforced);
  return { shares: { ...enforced }, held: quota - total, demand: { ...enforced } };
}

/**
 * Rebalances multi-region quotas every `intervalMs` until stopped (or `maxTicks`).
 * Ticks never overlap; a tick that overruns is followed at once by the next.
 */
export class Rebalancer {
  readonly #options: RebalancerOptions;
  readonly #regionNames: string[];
  readonly #scheduler: Scheduler;
  readonly #tracked = new Map<string, Tracked>();
  #queue: Promise<unknown> = Promise.resolve();
  #ticks = 0;
  #timer: unknown;
  #nextAtMs = 0;
  #state: "idle" | "running" | "stopped" = "idle";
  readonly #done: Promise<void>;
  #resolveDone: () => void = () => {};

  constructor(options: RebalancerOptions) {
    this.#regionNames = checkOptions(options);
    this.#options = options;
    this.#scheduler = options.scheduler ?? timerScheduler;
    this.#done = new Promise((resolve) => {
      this.#resolveDone = resolve;
    });
  }

  /** Ticks run so far. */
  get ticks(): number {
    return this.#ticks;
  }

  /** The split recorded for `key`, or undefined before its first complete tick. */
  split(key: QuotaKey): SplitState | undefined {
    return this.#tracked.get(idOf(key))?.split;
  }

  /** Starts ticking every intervalMs (the first tick one interval from now). */
  start(): void {
    if (this.#state !== "idle") throw new Error(`start() on a ${this.#state} rebalancer`);
    this.#state = "running";
    this.#nextAtMs = this.#options.clock.monotonicMs() + this.#options.intervalMs;
    this.#schedule();
  }

  /** Resolves when the loop has ended: stop() or maxTicks. */
  done(): Promise<void> {
    return this.#done;
  }

  /** Cancels the next tick and waits for a running one to finish. */
  async stop(): Promise<void> {
    this.#state = "stopped";
    if (this.#timer !== undefined) this.#scheduler.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#queue;
    this.#resolveDone();
  }

  /** Runs one tick now (serialized with the loop's). Never rejects: failures are in the report. */
  tick(): Promise<TickReport> {
    const run = this.#queue.then(() => this.#tickOnce());
    this.#queue = run;
    return run;
  }

  #schedule(): void {
    const maxTicks = this.#options.maxTicks ?? Number.POSITIVE_INFINITY;
    if (this.#state !== "running" || this.#ticks >= maxTicks) {
      this.#state = "stopped";
      this.#resolveDone();
      return;
    }
    const delayMs = Math.max(0, this.#nextAtMs - this.#options.clock.monotonicMs());
    this.#timer = this.#scheduler.setTimeout(() => {
      this.#timer = undefined;
      void this.tick().then(() => {
        this.#nextAtMs = Math.max(
          this.#nextAtMs + this.#options.intervalMs,
          this.#options.clock.monotonicMs(),
        );
        this.#schedule();
      });
    }, delayMs);
  }

  async #tickOnce(): Promise<TickReport> {
    const { clock } = this.#options;
    const startedAtMs = clock.nowMs();
    const startedMono = clock.monotonicMs();
    this.#ticks += 1;
    let quotas: QuotaTick[] = [];
    try {
      const plans = await this.#closeAll();
      for (const plan of plans) this.#rebalance(plan);
      await this.#publish(plans, "decreases");
      await this.#publish(plans, "rest");
      quotas = plans.map((plan) => this.#commit(plan));
    } catch (error) {
      this.#report(error);
    }
    const report = { tick: this.#ticks, startedAtMs, durationMs: clock.monotonicMs() - startedMono, quotas };
    try {
      this.#options.onTick?.(report);
    } catch (error) {
      this.#report(error);
    }
    return report;
  }

  #report(error: unknown): void {
    try {
      this.#options.onError?.(error);
    } catch {
      // The error sink itself failed: nothing more to tell anyone, and the loop must go on.
    }
  }

  /** Phase 1: closes every quota's window in every region; a region that fails is skipped. */
  async #closeAll(): Promise<Plan[]> {
    const keys = this.#options.quotas.map((q) => q.key);
    const perRegion = await Promise.all(
      this.#options.regions.map(async (store) => {
        const results = await settled(() => store.closeWindows(keys), keys.length);
        this.#reportFirstFailure(results);
        return results;
      }),
    );
    return this.#options.quotas.map((tracked, index) => {
      const plan: Plan = {
        tracked,
        closed: new Map(),
        skipped: [],
        enforced: {},
        publishFailed: [],
        reverted: false,
      };
      const statics = staticShares(tracked.quota);
      this.#regionNames.forEach((region, r) => {
        const result = perRegion[r]![index];
        if (result?.status !== "fulfilled") {
          plan.skipped.push(region);
          return;
        }
        plan.closed.set(region, result.value);
        plan.enforced[region] = result.value.shareUnits ?? statics[region]!;
      });
      return plan;
    });
  }

  /** One error per region and phase: a region down must not flood the sink once per quota. */
  #reportFirstFailure(results: readonly PromiseSettledResult<unknown>[]): void {
    const failed = results.find((result) => result.status === "rejected");
    if (failed) this.#report((failed as PromiseRejectedResult).reason);
  }

  /** Phase 2 (pure): the new split over the regions that answered. */
  #rebalance(plan: Plan): void {
    const { key, quota } = plan.tracked;
    const known = this.#tracked.get(idOf(key))?.split;
    // A first tick needs every region: the split starts from what each one enforces.
    if (known === undefined && plan.skipped.length > 0) return;
    plan.before = known ?? splitFromEnforced(quota.quota, plan.enforced);
    const usage: Record<string, IntervalUsage> = {};
    for (const [region, closed] of plan.closed) usage[region] = { used: closed.used, demand: closed.demand };
    plan.result = rebalanceReachable(plan.before, usage, {
      quota: quota.quota,
      minShare: quota.minShare,
      smoothing: quota.smoothing,
    });
  }

  /** Phases 3 and 4: decreases first; the rest only for quotas whose decreases all landed. */
  async #publish(plans: readonly Plan[], phase: "decreases" | "rest"): Promise<void> {
    const batches = this.#options.regions.map(() => [] as { plan: Plan; update: ShareUpdate }[]);
    for (const plan of plans) {
      if (plan.result === undefined || plan.reverted) continue;
      this.#regionNames.forEach((region, r) => {
        const closed = plan.closed.get(region);
        if (closed === undefined) return;
        const shareUnits = plan.result!.state.shares[region]!;
        const isDecrease = shareUnits < plan.enforced[region]!;
        if (isDecrease !== (phase === "decreases")) return;
        batches[r]!.push({ plan, update: { key: plan.tracked.key, epoch: closed.nextEpoch, shareUnits } });
      });
    }
    await Promise.all(
      this.#options.regions.map(async (store, r) => {
        const batch = batches[r]!;
        if (batch.length === 0) return;
        const outcomes = await settled(() => store.publishShares(batch.map((b) => b.update)), batch.length);
        this.#reportFirstFailure(outcomes);
        outcomes.forEach((outcome, i) => {
          // Not applied: the region's epoch moved on (another close): as unconfirmed as a timeout.
          if (outcome.status === "fulfilled" && outcome.value.applied) return;
          const { plan } = batch[i]!;
          plan.publishFailed.push(store.region);
          if (phase === "decreases") plan.reverted = true;
        });
      }),
    );
  }

  /** Records the new split (or keeps the old one) and describes the tick. */
  #commit(plan: Plan): QuotaTick {
    const id = idOf(plan.tracked.key);
    const overshootBound = this.#tracked.get(id)?.lastMoved ?? 0;
    if (plan.before !== undefined && plan.result !== undefined) {
      const committed = !plan.reverted;
      this.#tracked.set(id, {
        split: committed ? plan.result.state : plan.before,
        lastMoved: committed ? plan.result.moved : 0,
      });
    }
    const split = this.#tracked.get(id)?.split;
    const closed: Record<string, { used: number; demand: number; windowMs: number }> = {};
    let admittedTotal = 0;
    for (const [region, c] of plan.closed) {
      closed[region] = { used: c.used, demand: c.demand, windowMs: c.windowMs };
      admittedTotal += c.used;
    }
    const moved = plan.reverted ? 0 : (plan.result?.moved ?? 0);
    return {
      key: plan.tracked.key,
      status: statusOf(plan),
      closed,
      skipped: plan.skipped,
      publishFailed: plan.publishFailed,
      admittedTotal,
      overshootBound,
      quota: plan.tracked.quota.quota,
      sharesBefore: plan.enforced,
      shares: split?.shares ?? {},
      held: split?.held ?? 0,
      moved,
      reclaimed: plan.reverted ? 0 : (plan.result?.reclaimed ?? 0),
    };
  }
}

function statusOf(plan: Plan): QuotaTickStatus {
  if (plan.result === undefined) return "uninitialized";
  if (plan.reverted) return "reverted";
  return plan.skipped.length > 0 ? "partial" : "rebalanced";
}

function idOf(key: QuotaKey): string {
  return `${key.policy}\u0000${key.subject}`;
}

/** A batch call whose own failure (connection down) becomes one rejection per item. */
async function settled<T>(
  call: () => Promise<PromiseSettledResult<T>[]>,
  count: number,
): Promise<PromiseSettledResult<T>[]> {
  try {
    return await call();
  } catch (reason) {
    return Array.from({ length: count }, (): PromiseSettledResult<T> => ({ status: "rejected", reason }));
  }
}

/**
 * RL-14 multi-region quota split, engine-backed: each region decides on its own Redis
 * (src/store/region-quota-store.ts), the rebalancer (src/workers/rebalancer.ts) is the
 * only component talking to several. Pure parts first, then the store contract on both
 * engines, the rebalancer's failure rules in-process, and the claim on two real
 * redis-server processes.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import { labErrors } from "@casebook/lab/lab-errors";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { engineFree, enginesRequired, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import fc from "fast-check";
import { Redis } from "ioredis";
import { type SplitState, splitQuota } from "../src/domain/quota-split.ts";
import {
  closeRegionalWindow,
  decideRegional,
  type MultiRegionQuota,
  publishRegionalShare,
  type RegionalLimit,
  rebalanceReachable,
  regionalLimitOf,
} from "../src/domain/regional-limit.ts";
import {
  openInProcessRegionQuotaStore,
  openRedisRegionQuotaStore,
  type QuotaKey,
  type RegionQuotaStore,
} from "../src/store/region-quota-store.ts";
import { Rebalancer, type Scheduler, type TickReport } from "../src/workers/rebalancer.ts";
import { deleteKeys } from "./store-backends.ts";

// ------------------------------------------------------------------ helpers

const MINUTE_MS = 60_000;
/** The text's quota: 1000 per minute, 600 in region a, 400 in region b. */
const QUOTA: MultiRegionQuota = {
  quota: 1_000,
  weights: { a: 600, b: 400 },
  intervalMs: MINUTE_MS,
  minShare: 50,
  smoothing: 0.5,
};
const sum = (record: Readonly<Record<string, number>>) => Object.values(record).reduce((a, b) => a + b, 0);
let sequence = 0;
const freshKey = (): QuotaKey => ({ policy: "plan", subject: `key:${++sequence}` });

/** Timers that fire only when the test says so. */
class ManualScheduler implements Scheduler {
  readonly #pending = new Map<number, { callback: () => void; delayMs: number }>();
  #next = 0;

  setTimeout(callback: () => void, delayMs: number): unknown {
    this.#next += 1;
    this.#pending.set(this.#next, { callback, delayMs });
    return this.#next;
  }

  clearTimeout(handle: unknown): void {
    this.#pending.delete(handle as number);
  }

  get pending(): number {
    return this.#pending.size;
  }

  /** Runs the one pending timer; returns its delay. */
  fire(): number {
    assert.equal(this.#pending.size, 1, "exactly one timer should be pending");
    const [id, timer] = [...this.#pending][0]!;
    this.#pending.delete(id);
    timer.callback();
    return timer.delayMs;
  }
}

interface Driven {
  allowed: number;
  refused: number;
  failed: number;
  latenciesMs: number[];
}

/** Sends `requests` single-unit requests to one region, `concurrency` at a time. */
async function drive(
  store: RegionQuotaStore,
  key: QuotaKey,
  limit: RegionalLimit,
  requests: number,
  concurrency = 50,
): Promise<Driven> {
  const out: Driven = { allowed: 0, refused: 0, failed: 0, latenciesMs: [] };
  let sent = 0;
  const worker = async () => {
    while (sent < requests) {
      sent += 1;
      const startMs = performance.now();
      try {
        const decision = await store.spend(key, 1, limit);
        if (decision.allowed) out.allowed += 1;
        else out.refused += 1;
      } catch {
        out.failed += 1;
      }
      out.latenciesMs.push(performance.now() - startMs);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
  return out;
}

/** A store whose rebalancer-side calls can be made to fail, as a region that cannot be reached. */
function flaky(store: RegionQuotaStore): RegionQuotaStore & { failClose: boolean; failPublish: boolean } {
  const down = () => Promise.reject(new Error(`region ${store.region} unreachable (test)`));
  const wrapper = {
    failClose: false,
    failPublish: false,
    region: store.region,
    engine: store.engine,
    spend: store.spend.bind(store),
    closeWindows: (keys: readonly QuotaKey[]) => (wrapper.failClose ? down() : store.closeWindows(keys)),
    publishShares: (updates: Parameters<RegionQuotaStore["publishShares"]>[0]) =>
      wrapper.failPublish ? down() : store.publishShares(updates),
    readStates: store.readStates.bind(store),
    ping: store.ping.bind(store),
    close: store.close.bind(store),
  };
  return wrapper as RegionQuotaStore & { failClose: boolean; failPublish: boolean };
}

/** The value of a settled result that must have succeeded. */
function fulfilled<T>(result: PromiseSettledResult<T> | undefined): T {
  if (result?.status !== "fulfilled")
    assert.fail(`expected a fulfilled result, got ${String(result?.status)}`);
  return result.value;
}

async function publishedShare(store: RegionQuotaStore, key: QuotaKey): Promise<number | undefined> {
  return fulfilled((await store.readStates([key]))[0])?.shareUnits;
}

// ------------------------------------------------------------------ pure parts

describe("regional limit (pure)", () => {
  const limit: RegionalLimit = { staticShare: 3, intervalMs: 1_000, maxWindowMs: 2_000 };

  test("the static share holds until one is published; a refusal admits nothing and counts as demand", (t) => {
    if (engineFree(t)) return;
    let state = decideRegional(undefined, 100, limit, 1).state;
    state = decideRegional(state, 200, limit, 2).state;
    const refused = decideRegional(state, 300, limit, 1);
    assert.equal(refused.allowed, false);
    assert.equal(refused.retryAfterMs, 800, "until the window's expected close at 1100");
    assert.deepEqual(
      { admitted: refused.state.admitted, refused: refused.state.refused },
      { admitted: 3, refused: 1 },
    );
    assert.equal(refused.ttlMs, 2_000, "untracked: expires when idle, like its window");
    const { state: closedState, closed } = closeRegionalWindow(refused.state, 1_100);
    assert.deepEqual(closed, {
      epoch: 0,
      nextEpoch: 1,
      used: 3,
      demand: 4,
      windowMs: 1_000,
      shareUnits: undefined,
    });
    const published = publishRegionalShare(closedState, 1, 10);
    assert.ok(published.applied);
    const next = decideRegional(published.state, 1_200, limit, 4);
    assert.deepEqual([next.allowed, next.shareUnits, next.remaining, next.ttlMs], [true, 10, 6, 0]);
    assert.equal(
      publishRegionalShare(published.state, 2, 1).applied,
      false,
      "a publish for another epoch is refused",
    );
  });

  test("a window the rebalancer does not close closes itself after maxWindowMs; a clock stepping back reopens nothing", (t) => {
    if (engineFree(t)) return;
    const full = decideRegional(undefined, 1_000, limit, 3).state;
    assert.equal(decideRegional(full, 1_500, limit, 1).allowed, false);
    assert.equal(
      decideRegional(full, 2_500, limit, 1).retryAfterMs,
      500,
      "late rebalancer: until maxWindowMs",
    );
    assert.equal(decideRegional(full, 500, limit, 1).allowed, false, "RL-05: elapsed clamped at 0");
    const rolled = decideRegional(full, 3_000, limit, 1);
    assert.ok(rolled.allowed);
    assert.deepEqual([rolled.state.windowStartMs, rolled.state.admitted, rolled.state.epoch], [3_000, 1, 0]);
  });

  test("the regional limit of a quota is its static share of the 600/400 split", (t) => {
    if (engineFree(t)) return;
    assert.deepEqual(regionalLimitOf(QUOTA, "a"), {
      staticShare: 600,
      intervalMs: 60_000,
      maxWindowMs: 120_000,
    });
    assert.equal(regionalLimitOf(QUOTA, "b").staticShare, 400);
    assert.throws(() => regionalLimitOf(QUOTA, "c"), /not in the split/);
    assert.throws(() => regionalLimitOf({ ...QUOTA, maxWindowMs: 1 }, "a"), /maxWindowMs/);
  });

  test("RL-14 rebalancing the reachable regions keeps Σ shares + held = quota, leaves frozen regions alone, moves only reachable donors' unused share", (t) => {
    if (engineFree(t)) return;
    const regions = ["a", "b", "c"];
    const options = { quota: 999, minShare: 40, smoothing: 0.5 };
    const stepArb = fc.record({
      reachable: fc.subarray(regions),
      usage: fc.tuple(fc.nat(2_000), fc.nat(2_000), fc.nat(2_000)),
      extra: fc.tuple(fc.nat(1_500), fc.nat(1_500), fc.nat(1_500)),
    });
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 15 }), (steps) => {
        let state: SplitState = splitQuota(999, { a: 1, b: 1, c: 1 });
        for (const step of steps) {
          const usage: Record<string, { used: number; demand: number }> = {};
          for (const r of step.reachable) {
            const i = regions.indexOf(r);
            const used = Math.min(step.usage[i]!, state.shares[r]!);
            usage[r] = { used, demand: used + step.extra[i]! };
          }
          const result = rebalanceReachable(state, usage, options);
          let unusedOfDonors = 0;
          for (const r of regions) {
            const before = state.shares[r]!;
            const afterShare = result.state.shares[r]!;
            if (usage[r] === undefined) assert.equal(afterShare, before, `frozen ${r} keeps its share`);
            else if (afterShare < before) unusedOfDonors += before - usage[r]!.used;
            assert.ok(Number.isInteger(afterShare) && afterShare >= 40);
          }
          assert.equal(sum(result.state.shares) + result.state.held, 999);
          assert.ok(result.moved <= unusedOfDonors, `moved ${result.moved} > unused ${unusedOfDonors}`);
          state = result.state;
        }
      }),
      { seed: 1_414, numRuns: 300 },
    );
  });
});

// ------------------------------------------------------------------ store contract, both engines

interface StoreSubject {
  store: RegionQuotaStore;
  advance(ms: number): Promise<void>;
}

contractSuite<StoreSubject>(
  "RegionQuotaStore",
  [
    {
      name: "in-process",
      embedded: true,
      open: async () => {
        const clock = new ManualClock(1_700_000_000_000);
        const store = await openInProcessRegionQuotaStore({ region: "a", clock });
        return { subject: { store, advance: async (ms) => clock.advance(ms) }, close: () => store.close() };
      },
    },
    {
      name: "redis",
      open: async (t) => {
        const url = await requireRedis(t);
        if (!url) return undefined;
        const keyPrefix = `${uniqueName("rl-region")}:`;
        const store = await openRedisRegionQuotaStore({ region: "a", url, keyPrefix });
        // Engine time can only be waited for on a real server.
        const advance = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
        return {
          subject: { store, advance },
          close: async () => {
            await store.close();
            await deleteKeys(url, keyPrefix);
          },
        };
      },
    },
  ],
  (it) => {
    const limit: RegionalLimit = { staticShare: 3, intervalMs: MINUTE_MS, maxWindowMs: 2 * MINUTE_MS };

    it("spends against the static share until one is published; refusals admit nothing", async ({
      store,
    }) => {
      const key = freshKey();
      const decisions = [];
      for (let i = 0; i < 4; i++) decisions.push(await store.spend(key, 1, limit));
      assert.deepEqual(
        decisions.map((d) => [d.allowed, d.remaining, d.shareUnits, d.epoch]),
        [
          [true, 2, 3, 0],
          [true, 1, 3, 0],
          [true, 0, 3, 0],
          [false, 0, 3, 0],
        ],
      );
      assert.ok(decisions[3]!.retryAfterMs > 0 && decisions[3]!.retryAfterMs <= MINUTE_MS);
      const state = fulfilled((await store.readStates([key]))[0]);
      assert.deepEqual([state?.shareUnits, state?.admitted, state?.refused], [undefined, 3, 1]);
    });

    it("close reports the window and opens the next epoch; a publish lands only in the open epoch", async ({
      store,
    }) => {
      const key = freshKey();
      for (let i = 0; i < 4; i++) await store.spend(key, 1, limit);
      const closed = fulfilled((await store.closeWindows([key]))[0]);
      assert.deepEqual(
        [closed.epoch, closed.nextEpoch, closed.used, closed.demand, closed.shareUnits],
        [0, 1, 3, 4, undefined],
      );
      const publishes = await store.publishShares([
        { key, epoch: 2, shareUnits: 9 },
        { key, epoch: 1, shareUnits: 5 },
      ]);
      assert.deepEqual(publishes.map(fulfilled), [
        { applied: false, epoch: 1 },
        { applied: true, epoch: 1 },
      ]);
      const spent = await store.spend(key, 2, limit);
      assert.deepEqual([spent.allowed, spent.shareUnits, spent.remaining, spent.epoch], [true, 5, 3, 1]);
      await store.closeWindows([key]);
      const stale = await store.publishShares([{ key, epoch: 1, shareUnits: 500 }]);
      assert.deepEqual(fulfilled(stale[0]), { applied: false, epoch: 2 });
      assert.equal(await publishedShare(store, key), 5, "the stale publish changed nothing");
    });

    it("a window nobody closes closes itself after maxWindowMs (the rebalancer is down)", async (s) => {
      const key = freshKey();
      // A second between the two spends at most: on real Redis the window runs on its clock, and a
      // 30 ms window let a loaded host's next spend land in the next one.
      const short: RegionalLimit = { staticShare: 2, intervalMs: 500, maxWindowMs: 1_000 };
      assert.ok((await s.store.spend(key, 2, short)).allowed);
      assert.equal((await s.store.spend(key, 1, short)).allowed, false);
      await s.advance(1_100);
      assert.ok((await s.store.spend(key, 1, short)).allowed);
    });

    it("batches answer per key, in order, and bad arguments are refused by the script", async ({ store }) => {
      const keys = [freshKey(), freshKey(), freshKey()];
      await store.spend(keys[1]!, 2, limit);
      const closes = await store.closeWindows(keys);
      assert.deepEqual(
        closes.map((c) => fulfilled(c).used),
        [0, 2, 0],
      );
      await assert.rejects(store.spend(keys[0]!, 0, limit), { code: "REDIS_SCRIPT_FAILED" });
      const [bad] = await store.publishShares([{ key: keys[0]!, epoch: 1, shareUnits: -1 }]);
      assert.equal(bad?.status, "rejected");
    });
  },
);

// ------------------------------------------------------------------ the rebalancer's rules, in-process

describe("rebalancer (in-process engines, manual clock and timers)", () => {
  async function setup() {
    const clock = new ManualClock(1_700_000_000_000);
    const a = flaky(await openInProcessRegionQuotaStore({ region: "a", clock }));
    const b = flaky(await openInProcessRegionQuotaStore({ region: "b", clock }));
    return { clock, a, b, key: freshKey() };
  }

  test("RL-14 the loop ticks every interval on the injected scheduler, moves share toward the busy region, and stops after maxTicks", async (t) => {
    if (engineFree(t)) return;
    const { clock, a, b, key } = await setup();
    const scheduler = new ManualScheduler();
    const reports: TickReport[] = [];
    let onReport: () => void = () => {};
    const rebalancer = new Rebalancer({
      regions: [a, b],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
      scheduler,
      maxTicks: 5,
      onTick: (report) => {
        reports.push(report);
        onReport();
      },
    });
    rebalancer.start();
    for (let i = 0; i < 5; i++) {
      await drive(a, key, regionalLimitOf(QUOTA, "a"), 1_500);
      clock.advance(MINUTE_MS);
      const reported = new Promise<void>((resolve) => {
        onReport = resolve;
      });
      assert.equal(scheduler.fire(), MINUTE_MS, "one tick per interval");
      await reported;
    }
    await rebalancer.done();
    assert.equal(scheduler.pending, 0, "bounded: nothing scheduled after maxTicks");
    const shares = reports.map((r) => r.quotas[0]!.shares["a"]!);
    assert.deepEqual(
      reports.map((r) => r.quotas[0]!.status),
      ["rebalanced", "rebalanced", "rebalanced", "rebalanced", "rebalanced"],
    );
    for (let i = 1; i < shares.length; i++) assert.ok(shares[i]! >= shares[i - 1]!);
    assert.ok(shares.at(-1)! >= 900, `a holds ${shares.at(-1)}`);
    assert.equal(await publishedShare(a, key), shares.at(-1));
  });

  test("RL-14 a region that cannot be reached is frozen at its share and retried next tick; Σ shares + held stays = quota", async (t) => {
    if (engineFree(t)) return;
    const { a, b, key, clock } = await setup();
    const rebalancer = new Rebalancer({
      regions: [a, b],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
    });
    await drive(a, key, regionalLimitOf(QUOTA, "a"), 1_000);
    const first = (await rebalancer.tick()).quotas[0]!;
    b.failClose = true;
    await drive(a, key, regionalLimitOf(QUOTA, "a"), 1_500);
    const frozen = (await rebalancer.tick()).quotas[0]!;
    assert.equal(frozen.status, "partial");
    assert.deepEqual(frozen.skipped, ["b"]);
    assert.equal(frozen.shares["b"], first.shares["b"], "b keeps its share while unreachable");
    assert.equal(sum(frozen.shares) + frozen.held, 1_000);
    b.failClose = false;
    const back = (await rebalancer.tick()).quotas[0]!;
    assert.equal(back.status, "rebalanced");
    assert.ok(back.shares["b"]! < first.shares["b"]!, "b's unused share moves once b answers again");
    assert.equal(sum(back.shares) + back.held, 1_000);
    assert.equal(await publishedShare(b, key), back.shares["b"]);
  });

  test("a first tick needs every region; an unconfirmed decrease keeps the previous split (nothing grows)", async (t) => {
    if (engineFree(t)) return;
    const { a, b, key, clock } = await setup();
    const rebalancer = new Rebalancer({
      regions: [a, b],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
    });
    b.failClose = true;
    const uninitialized = (await rebalancer.tick()).quotas[0]!;
    assert.equal(uninitialized.status, "uninitialized");
    assert.equal(await publishedShare(a, key), undefined, "a keeps running its static share");
    b.failClose = false;
    b.failPublish = true;
    await drive(a, key, regionalLimitOf(QUOTA, "a"), 1_500);
    const reverted = (await rebalancer.tick()).quotas[0]!;
    assert.equal(reverted.status, "reverted");
    assert.deepEqual(reverted.publishFailed, ["b"]);
    assert.deepEqual(reverted.shares, { a: 600, b: 400 });
    assert.equal(reverted.moved, 0);
    assert.equal(await publishedShare(a, key), undefined, "a did not grow on b's unconfirmed shrink");
    b.failPublish = false;
    await drive(a, key, regionalLimitOf(QUOTA, "a"), 1_500);
    const healed = (await rebalancer.tick()).quotas[0]!;
    assert.equal(healed.status, "rebalanced");
    assert.ok(healed.shares["a"]! > 600);
    assert.equal(await publishedShare(a, key), healed.shares["a"]);
    assert.equal(await publishedShare(b, key), healed.shares["b"]);
  });

  test("a restarted rebalancer rebuilds the split from what the regions enforce", async (t) => {
    if (engineFree(t)) return;
    const { a, b, key, clock } = await setup();
    const first = new Rebalancer({
      regions: [a, b],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
    });
    for (let i = 0; i < 3; i++) {
      await drive(a, key, regionalLimitOf(QUOTA, "a"), 1_500);
      await first.tick();
    }
    const split = first.split(key)!;
    const second = new Rebalancer({
      regions: [a, b],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
    });
    const report = (await second.tick()).quotas[0]!;
    assert.deepEqual(report.sharesBefore, split.shares);
    assert.equal(sum(report.shares) + report.held, 1_000);
  });

  test("stop() cancels the next tick; options that cannot work are refused", async (t) => {
    if (engineFree(t)) return;
    const { a, b, key, clock } = await setup();
    const scheduler = new ManualScheduler();
    const options = {
      regions: [a, b],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
      scheduler,
    };
    const rebalancer = new Rebalancer(options);
    rebalancer.start();
    assert.equal(scheduler.pending, 1);
    await rebalancer.stop();
    assert.equal(scheduler.pending, 0);
    await rebalancer.done();
    assert.throws(() => new Rebalancer({ ...options, intervalMs: 1_000 }), /intervalMs/);
    assert.throws(() => new Rebalancer({ ...options, regions: [a] }), /weights name a, b/);
    assert.throws(() => new Rebalancer({ ...options, regions: [a, a] }), /unique/);
  });
});

// ------------------------------------------------------------------ the claim, on two real Redis servers

describe("RL-14 on two redis-server processes (one per region)", () => {
  let redisA: SpawnedRedis | undefined;
  let redisB: SpawnedRedis | undefined;
  let skipReason: string | undefined;
  const opened: RegionQuotaStore[] = [];
  /**
   * Bound on one rebalancer call to a region: a frozen region costs the tick this much.
   * Generous: at 300 ms a loaded 2-core machine timed out a healthy region's call, and the
   * tick came out "partial" (the frozen region is still skipped, 2 s later).
   */
  const rebalancerTimeoutMs = 2_000;
  /** Bound on one request-path call: a path that touched the frozen region fails at it. */
  const serviceTimeoutMs = 2_000;

  before(async () => {
    try {
      redisA = await spawnRedis();
      redisB = await spawnRedis();
    } catch (error) {
      if (!labErrors.is(error, "LAB_ENGINE_MISSING") || enginesRequired) throw error;
      skipReason = (error as Error).message;
    }
  });

  after(async () => {
    redisB?.resume();
    await Promise.all(opened.map((store) => store.close()));
    await redisA?.stop();
    await redisB?.stop();
  });

  /** The region services (request path) and the rebalancer's own connections, as separate clients. */
  async function regions() {
    const open = async (region: string, url: string, commandTimeoutMs: number) => {
      const store = await openRedisRegionQuotaStore({ region, url, commandTimeoutMs });
      opened.push(store);
      return store;
    };
    return {
      serviceA: await open("a", redisA!.url, serviceTimeoutMs),
      serviceB: await open("b", redisB!.url, serviceTimeoutMs),
      rebalancerA: await open("a", redisA!.url, rebalancerTimeoutMs),
      rebalancerB: await open("b", redisB!.url, rebalancerTimeoutMs),
    };
  }

  test("RL-14 1000/min split 600/400, region a busy and b idle: a's share grows toward demand over a few ticks, and the total admitted per interval stays ≤ quota + the share moved at the previous tick", async (t) => {
    if (engineFree(t)) return;
    if (skipReason !== undefined) return t.skip(skipReason);
    const { serviceA, serviceB, rebalancerA, rebalancerB } = await regions();
    const key = freshKey();
    const clock = new ManualClock(1_700_000_000_000);
    const rebalancer = new Rebalancer({
      regions: [rebalancerA, rebalancerB],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
      scheduler: new ManualScheduler(),
    });
    const rows: string[] = [];
    for (let interval = 0; interval < 8; interval++) {
      const drivenA = await drive(serviceA, key, regionalLimitOf(QUOTA, "a"), 1_500);
      const drivenB = await drive(serviceB, key, regionalLimitOf(QUOTA, "b"), interval === 0 ? 10 : 0);
      clock.advance(MINUTE_MS);
      const q = (await rebalancer.tick()).quotas[0]!;
      rows.push(
        `${interval}: a ${q.sharesBefore["a"]}→${q.shares["a"]} b ${q.sharesBefore["b"]}→${q.shares["b"]} admitted ${q.admittedTotal} bound ${q.overshootBound}`,
      );
      assert.equal(drivenA.failed + drivenB.failed, 0);
      assert.equal(q.status, "rebalanced");
      // Every admitted request the regions answered is in the rebalancer's usage, exactly.
      assert.equal(q.closed["a"]!.used, drivenA.allowed);
      assert.equal(q.closed["b"]!.used, drivenB.allowed);
      assert.equal(q.closed["a"]!.demand, 1_500);
      assert.equal(drivenA.allowed, q.sharesBefore["a"], "a admits exactly its share");
      assert.ok(q.admittedTotal <= QUOTA.quota + q.overshootBound, rows.at(-1));
      assert.equal(sum(q.shares) + q.held, QUOTA.quota);
      assert.equal(await publishedShare(serviceA, key), q.shares["a"]);
      assert.equal(await publishedShare(serviceB, key), q.shares["b"]);
    }
    t.diagnostic(rows.join("\n"));
    const final = rebalancer.split(key)!;
    assert.ok(final.shares["a"]! >= 900, `a ends with ${final.shares["a"]}`);
    assert.equal(final.shares["b"], QUOTA.minShare, "the idle region keeps its floor");
  });

  test("RL-14 no cross-region call on the request path: with b's Redis frozen (SIGSTOP) region a decides every request correctly, and the rebalancer skips b and keeps Σ shares + held = quota", async (t) => {
    if (engineFree(t)) return;
    if (skipReason !== undefined) return t.skip(skipReason);
    const { serviceA, rebalancerA, rebalancerB } = await regions();
    const key = freshKey();
    const clock = new ManualClock(1_700_000_000_000);
    const errors: unknown[] = [];
    const rebalancer = new Rebalancer({
      regions: [rebalancerA, rebalancerB],
      quotas: [{ key, quota: QUOTA }],
      intervalMs: MINUTE_MS,
      clock,
      scheduler: new ManualScheduler(),
      onError: (error) => errors.push(error),
    });
    const limitA = regionalLimitOf(QUOTA, "a");
    const before = await drive(serviceA, key, limitA, 1_500);
    const first = (await rebalancer.tick()).quotas[0]!;
    const shareA = first.shares["a"]!;

    redisB!.pause();
    try {
      const during = await drive(serviceA, key, limitA, 1_500);
      // A request path that touched b would hang on the frozen server and fail with a timeout.
      assert.equal(during.failed, 0);
      assert.equal(during.allowed, shareA, "a admits exactly its share, decided locally");
      assert.equal(during.refused, 1_500 - shareA);
      const p99 = (ms: number[]) => [...ms].sort((x, y) => x - y)[Math.floor(ms.length * 0.99)]!.toFixed(2);
      t.diagnostic(
        `a's latency p99 before ${p99(before.latenciesMs)} ms, with b frozen ${p99(during.latenciesMs)} ms`,
      );
      const frozen = (await rebalancer.tick()).quotas[0]!;
      assert.equal(frozen.status, "partial");
      assert.deepEqual(frozen.skipped, ["b"]);
      assert.equal(frozen.shares["b"], first.shares["b"], "b keeps its last share");
      assert.equal(sum(frozen.shares) + frozen.held, QUOTA.quota);
      assert.equal(frozen.closed["a"]!.used, shareA);
      assert.ok(errors.length > 0, "the unreachable region is reported");
    } finally {
      redisB!.resume();
    }

    const back = (await rebalancer.tick()).quotas[0]!;
    assert.equal(back.status, "rebalanced");
    assert.equal(sum(back.shares) + back.held, QUOTA.quota);
    assert.equal(await publishedShare(rebalancerB, key), back.shares["b"]);
    // Structural check: region a's service never opened a connection to region b's Redis.
    const admin = new Redis(redisB!.url, { maxRetriesPerRequest: 1 });
    try {
      const clients = String(await admin.client("LIST"));
      assert.doesNotMatch(clients, /name=rq-a\b/);
      assert.match(clients, /name=rq-b\b/);
    } finally {
      admin.disconnect();
    }
  });
});

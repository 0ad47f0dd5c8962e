/**
 * Scenario "closed": max decisions/s with N concurrent callers on one Redis, in this one
 * invocation so the ratios hold on a noisy machine; one contender at a time, fresh keys.
 *
 * Equal work (issue 12): the peer's Redis limiter is a fixed-window counter, and a refusal
 * that writes nothing is cheaper than an admission, so ours is compared with it on the SAME
 * algorithm at the SAME limit (fixed window, 10 per 2 s: the same admitted share, printed
 * for both) and on an all-admitted limit (every decision writes, both sides). Our token
 * bucket is reported on its own, and beside the floor: one EVALSHA of the design text's
 * script per decision (ioredis, and redis-benchmark when installed).
 *
 * @example
 * const rows = await runClosedScenario(target, { concurrency: 50, durationMs: 5_000, warmupMs: 1_000,
 *   users: 10_000, log });
 */
import { readFile } from "node:fs/promises";
import type { BenchResult } from "@casebook/lab/bench-report";
import { scenarioRows } from "@casebook/lab/bench-rows";
import { allowedRow, contenderRows, system } from "./bench-rows.ts";
import {
  benchAllAdmitted,
  benchFixedWindow,
  benchLimit,
  type Contender,
  openOursLimiter,
  openOursStore,
  openPeer,
  openSeedFloor,
  seedScriptUrl,
} from "./contenders.ts";
import { type Measured, type MeasureOptions, measureClosed } from "./measure.ts";
import { type RedisBenchmarkResult, runRedisBenchmark } from "./redis-benchmark.ts";
import type { RedisTarget } from "./redis-target.ts";

export interface ClosedOptions extends Omit<MeasureOptions, "redis"> {
  readonly concurrency: number;
}

async function run(
  open: () => Promise<Contender>,
  target: RedisTarget,
  options: ClosedOptions,
): Promise<Measured> {
  const contender = await open();
  try {
    return await measureClosed(contender, { ...options, redis: target });
  } finally {
    await contender.close();
  }
}

const redisBenchmarkName = "floor: seed EVALSHA, redis-benchmark";

function redisBenchmarkRows(scenario: string, result: RedisBenchmarkResult): BenchResult[] {
  const row = scenarioRows({ system, scenario, tidy: true });
  return [
    row.value("throughput", "decisions/s", result.rps),
    row.value("latency p50", "ms", result.p50Ms),
    row.value("latency p99", "ms", result.p99Ms),
  ];
}

/** Ours against each floor: how close the full decision path gets to one bare round trip. */
function floorRows(scenario: string, ours: Measured, floors: { name: string; rps: number }[]): BenchResult[] {
  return floors.map((floor) =>
    scenarioRows({ system, scenario, peer: floor.name, tidy: true }).value(
      `throughput, ${ours.contender} vs floor`,
      "decisions/s",
      ours.report.achievedRatePerS,
      { peer: floor.rps },
    ),
  );
}

/** The scenario label of the equal-work comparison (main.ts's goal line reads its ratio). */
export const equalWorkLabel = "fixed window 10 per 2 s, Limiter.check";

/**
 * Runs every contender of the closed-loop scenario and returns its rows.
 *
 * @example
 * renderBench(await runClosedScenario(target, options), "markdown");
 */
export async function runClosedScenario(target: RedisTarget, options: ClosedOptions): Promise<BenchResult[]> {
  const label = `closed c=${options.concurrency}, ${options.users} users`;
  const fixed = await run(
    () => openOursLimiter(target, { domain: "fw", limit: benchFixedWindow }),
    target,
    options,
  );
  const peer = await run(() => openPeer(target, benchFixedWindow), target, options);
  const allOurs = await run(
    () => openOursLimiter(target, { domain: "fw-all", limit: benchAllAdmitted }),
    target,
    options,
  );
  const allPeer = await run(() => openPeer(target, benchAllAdmitted), target, options);
  const bucket = await run(() => openOursLimiter(target, { domain: "tb" }), target, options);
  const store = await run(
    () => openOursStore(target, { namespace: "spend", algorithm: "fixed-window", limit: benchFixedWindow }),
    target,
    options,
  );
  // What-if: openRedisLimiterStore batches the single-key decisions of one event-loop turn
  // into one script call; this is the same path with one script call per decision.
  const unbatched = await run(
    () => openOursLimiter(target, { domain: "fw-nopipe", batching: false, limit: benchFixedWindow }),
    target,
    options,
  );
  const seed = await run(() => openSeedFloor(target), target, options);
  const sha = String(await target.admin.script("LOAD", await readFile(seedScriptUrl, "utf8")));
  const benchmark = await runRedisBenchmark({
    url: target.url,
    sha,
    keyPrefix: target.keyPrefix,
    users: options.users,
    concurrency: options.concurrency,
    durationMs: options.durationMs,
    limit: benchLimit,
    log: options.log,
  });
  const floors = [{ name: seed.contender, rps: seed.report.achievedRatePerS }];
  if (benchmark) floors.push({ name: redisBenchmarkName, rps: benchmark.rps });
  return [
    ...contenderRows(`${label}: ${equalWorkLabel}`, fixed, peer),
    allowedRow(`${label}: ${equalWorkLabel}`, `allowed share, ${peer.contender}`, peer),
    ...contenderRows(`${label}: fixed window, all admitted, Limiter.check`, allOurs, allPeer),
    allowedRow(
      `${label}: fixed window, all admitted, Limiter.check`,
      `allowed share, ${allPeer.contender}`,
      allPeer,
    ),
    ...contenderRows(`${label}: token bucket 10 @ 5/s, Limiter.check`, bucket),
    ...contenderRows(`${label}: fixed window, store.spend`, store, peer),
    ...contenderRows(`${label}: fixed window, Limiter.check, unbatched`, unbatched, peer),
    ...contenderRows(`${label}: ${seed.contender}`, seed),
    ...(benchmark ? redisBenchmarkRows(`${label}: ${redisBenchmarkName}`, benchmark) : []),
    ...floorRows(`${label}: vs floor`, bucket, floors),
  ];
}

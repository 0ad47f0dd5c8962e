/**
 * Scenario "closed": max decisions/s with N concurrent callers on one Redis, ours
 * beside rate-limiter-flexible and beside the floor (one EVALSHA of the design
 * text's script per decision), all in this one invocation so the ratios hold on a
 * noisy machine. Runs one contender at a time, each on fresh keys.
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

/**
 * Runs every contender of the closed-loop scenario and returns its rows.
 *
 * @example
 * renderBench(await runClosedScenario(target, options), "markdown");
 */
export async function runClosedScenario(target: RedisTarget, options: ClosedOptions): Promise<BenchResult[]> {
  const label = `closed c=${options.concurrency}, ${options.users} users`;
  const limiter = await run(() => openOursLimiter(target, { domain: "check" }), target, options);
  const peer = await run(() => openPeer(target), target, options);
  const store = await run(() => openOursStore(target, { namespace: "spend" }), target, options);
  // What-if runs: openRedisLimiterStore batches the single-key decisions of one event-loop
  // turn into one script call; these show the same paths with one script call per decision.
  const limiterNoPipe = await run(
    () => openOursLimiter(target, { domain: "check-nopipe", batching: false }),
    target,
    options,
  );
  const storeNoPipe = await run(
    () => openOursStore(target, { namespace: "spend-nopipe", batching: false }),
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
    ...contenderRows(`${label}: Limiter.check`, limiter, peer),
    allowedRow(`${label}: Limiter.check`, `allowed share, ${peer.contender}`, peer),
    ...contenderRows(`${label}: store.spend`, store, peer),
    ...contenderRows(`${label}: Limiter.check, unbatched`, limiterNoPipe, peer),
    ...contenderRows(`${label}: store.spend, unbatched`, storeNoPipe, peer),
    ...contenderRows(`${label}: ${seed.contender}`, seed),
    ...(benchmark ? redisBenchmarkRows(`${label}: ${redisBenchmarkName}`, benchmark) : []),
    ...floorRows(`${label}: vs floor`, limiter, floors),
  ];
}

/**
 * `--algorithms` (RL-07): the text's comparison of algorithms in one command. The
 * table from src/domain/algorithm-comparison.ts (burst at a window boundary, error
 * against an exact log, modelled bytes per key) plus, measured here for every
 * algorithm: decisions/s on the in-process store and on Redis (closed loop, the
 * bare store.spend), and MEMORY USAGE of its keys in Redis at steady state.
 *
 * @example
 * const result = await runAlgorithmsScenario(target, { concurrency: 50, durationMs: 1_000, warmupMs: 200,
 *   users: 10_000, log });
 * process.stdout.write(result.comparisonMarkdown);
 */
import { systemClock } from "@casebook/kit/clock";
import type { BenchResult } from "@casebook/lab/bench-report";
import { scenarioRows } from "@casebook/lab/bench-rows";
import { type AlgorithmName, algorithmNames, type Limit } from "../src/domain/algorithm.ts";
import { type AlgorithmComparisonRow, printAlgorithmComparison } from "../src/domain/algorithm-comparison.ts";
import { openInProcessLimiterStore, openRedisLimiterStore } from "../src/store/limiter-store.ts";
import { system } from "./bench-rows.ts";
import { type Contender, openOursStore } from "./contenders.ts";
import { type Measured, type MeasureOptions, measureClosed } from "./measure.ts";
import type { RedisTarget } from "./redis-target.ts";

export interface AlgorithmsOptions extends Omit<MeasureOptions, "redis"> {
  readonly concurrency: number;
}

export interface AlgorithmsResult {
  /** The RL-07 table, as printAlgorithmComparison writes it. */
  readonly comparisonMarkdown: string;
  /** Measured here: decisions/s per engine, Redis latency and bytes per key. */
  readonly measuredRows: BenchResult[];
  /** The comparison table's numbers as rows, for --json. */
  readonly modelRows: BenchResult[];
}

/**
 * "100 per 10 s" in each algorithm's terms: the keys live ≥ 10 s (none expires
 * while sampled) and the sliding log holds at most 100 entries per key.
 */
const benchLimits: { readonly [N in AlgorithmName]: Limit } = {
  "token-bucket": { algorithm: "token-bucket", capacity: 100, ratePerS: 10 },
  "fixed-window": { algorithm: "fixed-window", limit: 100, windowMs: 10_000 },
  "sliding-window-log": { algorithm: "sliding-window-log", limit: 100, windowMs: 10_000 },
  "sliding-window-counter": { algorithm: "sliding-window-counter", limit: 100, windowMs: 10_000 },
  "leaky-bucket": { algorithm: "leaky-bucket", queueCapacity: 100, ratePerS: 10 },
  gcra: { algorithm: "gcra", burst: 100, ratePerS: 10 },
};
/** Keys whose MEMORY USAGE is averaged per algorithm. */
const sampledKeys = 200;

/** Average MEMORY USAGE over existing keys among the first users; undefined when none exists. */
async function averageKeyBytes(target: RedisTarget, contender: Contender, users: number) {
  let total = 0;
  let counted = 0;
  for (let i = 0; i < users && counted < sampledKeys; i++) {
    const bytes = await target.admin.call("MEMORY", "USAGE", contender.keyOf(`user-${i}`), "SAMPLES", "0");
    if (bytes === null) continue; // never drawn, or expired
    total += Number(bytes);
    counted++;
  }
  return counted === 0 ? undefined : total / counted;
}

async function measureAlgorithm(target: RedisTarget, name: AlgorithmName, options: AlgorithmsOptions) {
  const limit = benchLimits[name];
  const local = await openOursStore(target, {
    algorithm: name,
    limit,
    namespace: `alg-local:${name}`,
    store: await openInProcessLimiterStore({ clock: systemClock }),
  });
  let inProcess: Measured;
  try {
    inProcess = await measureClosed(local, options);
  } finally {
    await local.close();
  }
  const store = await openRedisLimiterStore({ url: target.url, keyPrefix: target.keyPrefix });
  const remote = await openOursStore(target, { algorithm: name, limit, namespace: `alg:${name}`, store });
  try {
    const onRedis = await measureClosed(remote, { ...options, redis: target });
    return { inProcess, onRedis, keyBytes: await averageKeyBytes(target, remote, options.users) };
  } finally {
    await remote.close();
  }
}

function measuredRowsOf(
  name: AlgorithmName,
  concurrency: number,
  m: Awaited<ReturnType<typeof measureAlgorithm>>,
): BenchResult[] {
  const scenario = `algorithms (RL-07), closed c=${concurrency}: ${name}`;
  const { value: row } = scenarioRows({ system, scenario, tidy: true });
  const rows = [
    row("throughput, in-process store", "decisions/s", m.inProcess.report.achievedRatePerS),
    row("throughput, Redis", "decisions/s", m.onRedis.report.achievedRatePerS),
    row("latency p99, Redis", "ms", m.onRedis.report.latencyMs.p99),
  ];
  if (m.onRedis.serverUsPerDecision !== undefined)
    rows.push(row("Redis time per decision", "µs", m.onRedis.serverUsPerDecision));
  if (m.keyBytes !== undefined)
    rows.push(row("bytes per key after the run, MEMORY USAGE on Redis", "B", m.keyBytes));
  return rows;
}

function modelRowsOf(r: AlgorithmComparisonRow): BenchResult[] {
  const scenario = `algorithms (RL-07), comparison traffic: ${r.algorithm}`;
  const rows = scenarioRows({ system, scenario });
  const row = (metric: string, unit: string, value: number) =>
    rows.value(metric, unit, value, { direction: "lower-is-better" });
  return [
    row("max admitted in any 1 s", "requests", r.burstMax1s),
    row("max admitted in any 60 s", "requests", r.outputMax60s),
    row("overshoot over the limit", "%", r.overshootPct),
    row("let through over an exact log", "%", r.overLimitPct),
    row("refused under an exact log", "%", r.wronglyRefusedPct),
    row("output gap CV", "ratio", r.gapCv),
    row("state bytes per key (model)", "B", r.stateBytesMax),
  ];
}

/**
 * Runs the RL-07 comparison and measures every algorithm on both engines.
 *
 * @example
 * const { comparisonMarkdown, measuredRows } = await runAlgorithmsScenario(target, options);
 */
export async function runAlgorithmsScenario(
  target: RedisTarget,
  options: AlgorithmsOptions,
): Promise<AlgorithmsResult> {
  let comparisonMarkdown = "";
  const comparison = printAlgorithmComparison((markdown) => {
    comparisonMarkdown += markdown;
  });
  const measuredRows: BenchResult[] = [];
  for (const name of algorithmNames) {
    const measured = await measureAlgorithm(target, name, options);
    measuredRows.push(...measuredRowsOf(name, options.concurrency, measured));
  }
  return {
    comparisonMarkdown,
    measuredRows,
    modelRows: comparison.flatMap(modelRowsOf),
  };
}

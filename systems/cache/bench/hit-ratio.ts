/**
 * CA-24's bench: hit ratio of LRU, Redis's sampled LRU / LFU / volatile-ttl, LFU-DA,
 * W-TinyLFU and Bélády's optimum on three traces (Zipf 0.99, scan-polluted Zipf, loop)
 * at cache sizes of 1%, 5% and 10% of the key space. Pure computation, deterministic for
 * a seed. Runnable alone, and `runHitRatioBench` is what `bench/main.ts` calls.
 *
 * @example
 * // node systems/cache/bench/hit-ratio.ts --keys 10000 --requests 100000 --json
 * const { rows, markdown } = runHitRatioBench({ keys: 10_000, requests: 100_000, seed: "ca-24" });
 */

import { seededRandom } from "@casebook/kit/random";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, renderBench } from "@casebook/lab/bench-report";
import {
  type HitRatioCell,
  hitRatioTable,
  type NamedTrace,
  policyLabels,
} from "../src/domain/hit-ratio-sim.ts";
import { loopTrace } from "../src/domain/loop-trace.ts";
import { scanPollutedTrace } from "../src/domain/scan-trace.ts";
import { zipfTrace } from "../src/domain/zipf-trace.ts";
import { type HitRatioArgs, hitRatioHelp, parseHitRatioArgs } from "./hit-ratio-args.ts";
import { hitRatioBenchErrors } from "./hit-ratio-errors.ts";
import { hitRatioGoals, hitRatioPivot, hitRatioRows } from "./hit-ratio-report.ts";

export interface HitRatioBenchOptions {
  readonly keys: number;
  readonly requests: number;
  readonly seed: string;
  /** Progress lines (stderr in the CLI). */
  readonly log?: (line: string) => void;
}

export interface HitRatioBenchResult {
  readonly cells: HitRatioCell[];
  /** Bench rows for renderBench / --json (peer: LRU). */
  readonly rows: BenchResult[];
  /** The pivot table and the goal lines, for people. */
  readonly markdown: string;
}

/**
 * The study's three traces, seeded from `seed`. Scans and the loop both span a fifth of the
 * key space: longer than every cache size (2x the 10% cache, 20x the 1% one), so LRU gets
 * nothing from the loop, and the 1% row shows where W-TinyLFU's memory ends (its sketch
 * ages every 10x the cache's entries).
 */
export function hitRatioTraces(
  options: Pick<HitRatioBenchOptions, "keys" | "requests" | "seed">,
): NamedTrace[] {
  const { keys, requests, seed } = options;
  const fifth = Math.max(1, Math.floor(keys / 5));
  return [
    { name: "zipf 0.99", trace: zipfTrace({ keys, requests, random: seededRandom(`${seed}:zipf`) }), keys },
    {
      name: "zipf + 20% scans",
      trace: scanPollutedTrace({
        keys,
        requests,
        scanLength: fifth,
        random: seededRandom(`${seed}:scan`),
      }),
      keys,
    },
    {
      name: `loop of ${fifth.toLocaleString("en-US")} keys`,
      trace: loopTrace({ length: fifth, requests }),
      keys,
    },
  ];
}

/** Runs the study and shapes its report. */
export function runHitRatioBench(options: HitRatioBenchOptions): HitRatioBenchResult {
  const log = options.log ?? (() => {});
  const startedMs = performance.now();
  const traces = hitRatioTraces(options);
  const cells = hitRatioTable({
    traces,
    seed: options.seed,
    onCell: (cell) =>
      log(
        `${cell.trace}, ${cell.capacity} entries, ${policyLabels[cell.policy]}: ${(cell.hitRatio * 100).toFixed(2)}%`,
      ),
  });
  log(`hit-ratio study: ${((performance.now() - startedMs) / 1_000).toFixed(1)} s`);
  const header = `hit ratio (%), ${options.keys.toLocaleString("en-US")} keys, ${options.requests.toLocaleString("en-US")} requests per trace, seed "${options.seed}"`;
  const markdown = [header, "", hitRatioPivot(cells), "", ...hitRatioGoals(cells)].join("\n");
  return { cells, rows: hitRatioRows(cells), markdown };
}

function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** Nothing to open: the study is pure computation. */
interface NoTarget {
  close(): Promise<void>;
}

/** The standalone program (flags, help, exit codes) through lab's bench-main. */
export const hitRatioBenchProgram: BenchProgram<HitRatioArgs, NoTarget> = {
  name: "cache hit-ratio",
  parseArgs: parseHitRatioArgs,
  isArgsError: (error): error is Error => hitRatioBenchErrors.is(error),
  help: hitRatioHelp,
  openTarget: async () => ({ close: async () => {} }),
  run: async (_target, args, json) => {
    const result = runHitRatioBench({
      keys: args.keys,
      requests: args.requests,
      seed: args.seed,
      log: benchLog,
    });
    if (json) return print(renderBench(result.rows, "json"));
    print(`${result.markdown}\n\n${renderBench(result.rows, "markdown")}`);
  },
};

/** Runs the bench on `argv`; resolves the exit code (0 ok, 2 bad flags). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(hitRatioBenchProgram, argv);
}

if (import.meta.main) runBenchEntry(hitRatioBenchProgram);

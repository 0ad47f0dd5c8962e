/**
 * The bench's rows from its runs: per concurrency, the simulator called directly (the
 * baseline), the latency each gateway ADDS to it (its percentile minus the direct run's:
 * TTFT and total, p50 and p99) — plain proxying beside Portkey, full features beside plain
 * proxying (the features' cost), a bare Node relay alone (the floor: what one more Node
 * process on the path costs) — and the memory each gateway holds per open stream. The goal
 * line: plain proxying adds at most half of Portkey's overhead at p50 and at p99 (the floor's
 * figure printed beside it).
 *
 * Each level runs in rounds (every target once per round, back to back): a target's added
 * latency is taken within its round (its percentile minus that round's direct run), and the
 * row gives the MEDIAN of those per-round differences — one round's p99 of ~150 streams is
 * about its second-slowest stream, so a single stalled burst, ours or the machine's, moves
 * it by hundreds of ms; the median of paired rounds is what a shared machine can give.
 *
 * @example
 * const rows = latencyRows([{ concurrency: 50, rounds: [{ direct, portkey, plain, full }, …] }]);
 * goalLines(rows); // ["50 streams: TTFT p50 0.9 ms vs Portkey 2.4 ms (≤ 0.5×: met)", …]
 */
import { type BenchResult, benchRow, median as labMedian } from "@casebook/lab/bench-report";
import type { TargetName } from "./bench-targets.ts";
import type { LatencyMs, RunResult } from "./stream-load-child.ts";

const SYSTEM = "llm-gateway";
export const GOAL_FACTOR = 0.5;
/** The bare Node relay's rows (`relay-floor.ts`): the least one more Node process on the path adds. */
const FLOOR_SCENARIO = "floor: a bare Node relay";
/** The same relay behind the shared edge (`edge-floor.ts`): what the edge adds to a request. */
const EDGE_SCENARIO = "floor: the relay behind the shared edge";

export interface TargetRun {
  readonly result: RunResult;
  /** RSS mid-run minus RSS idle before it, divided by the streams held open. */
  readonly bytesPerStream: number;
  /**
   * CPU time of the target's process after the warmup over the streams that ended then: what
   * a stream costs, which a loaded machine stretches far less than it stretches a p99.
   */
  readonly cpuMsPerStream: number;
}

/** One round: every target measured once, back to back. */
export type RoundRuns = Partial<Record<TargetName, TargetRun>>;

export interface LevelRuns {
  readonly concurrency: number;
  readonly rounds: readonly RoundRuns[];
  /**
   * The direct call measured again at the end of each round (A/A, by round; undefined where it
   * did not run): its difference from the round's first direct run is the run's own noise.
   */
  readonly aa?: readonly (TargetRun | undefined)[];
}

const POINTS = [
  ["TTFT p50", "ttftMs", "p50"],
  ["TTFT p99", "ttftMs", "p99"],
  ["total p50", "totalMs", "p50"],
  ["total p99", "totalMs", "p99"],
] as const;

function at(run: TargetRun, key: "ttftMs" | "totalMs", point: keyof LatencyMs): number {
  return run.result[key][point];
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** The middle value (lab's median); undefined for none. */
export function median(values: readonly number[]): number | undefined {
  return values.length === 0 ? undefined : labMedian(values);
}

/** A run with no stream measured to its end has no percentile to compare: its errors row says why. */
function measured(run: TargetRun | undefined): TargetRun | undefined {
  return run !== undefined && run.result.ok > 0 && run.result.ttftMs.count > 0 ? run : undefined;
}

/**
 * The median over rounds of `name`'s percentile minus the same round's direct run's: what the
 * hop through the gateway costs. Undefined when no round measured both.
 */
export function added(
  rounds: readonly RoundRuns[],
  name: Exclude<TargetName, "direct">,
  key: "ttftMs" | "totalMs",
  point: "p50" | "p99",
): number | undefined {
  const diffs: number[] = [];
  for (const runs of rounds) {
    const [run, direct] = [measured(runs[name]), measured(runs.direct)];
    if (run && direct) diffs.push(at(run, key, point) - at(direct, key, point));
  }
  const middle = median(diffs);
  return middle === undefined ? undefined : round(middle);
}

/**
 * The A/A noise: the median over rounds of |the direct call again − the round's direct call|
 * at this percentile. Undefined without an A/A run.
 */
export function aaNoise(
  level: LevelRuns,
  key: "ttftMs" | "totalMs",
  point: "p50" | "p99",
): number | undefined {
  const diffs: number[] = [];
  level.rounds.forEach((runs, i) => {
    const [again, direct] = [measured(level.aa?.[i]), measured(runs.direct)];
    if (again && direct) diffs.push(Math.abs(at(again, key, point) - at(direct, key, point)));
  });
  const middle = median(diffs);
  return middle === undefined ? undefined : round(middle);
}

/** The median over rounds of what `pick` reads from `name`'s measured runs. */
function medianOf(
  rounds: readonly RoundRuns[],
  name: TargetName,
  pick: (run: TargetRun) => number,
): number | undefined {
  const values: number[] = [];
  for (const runs of rounds) {
    const run = measured(runs[name]);
    if (run) values.push(pick(run));
  }
  const middle = median(values);
  return middle === undefined ? undefined : round(middle);
}

/** Whether any round ran `name` (measured or not: a run of all errors still has its errors row). */
function ran(rounds: readonly RoundRuns[], name: TargetName): boolean {
  return rounds.some((runs) => runs[name] !== undefined);
}

function errorRows(concurrency: number, rounds: readonly RoundRuns[]): BenchResult[] {
  // A stream still running when its run ended failed to finish in time: counted with the errors.
  const failed = (name: TargetName) =>
    rounds.reduce((sum, runs) => {
      const run = runs[name];
      return run === undefined ? sum : sum + run.result.errors + run.result.unfinished;
    }, 0);
  const scenario = (what: string) => `${concurrency} streams, ${what}`;
  type Peer = { peer?: { name: string; value: number } };
  const portkeyPeer: Peer = ran(rounds, "portkey")
    ? { peer: { name: "portkey 1.15.2", value: failed("portkey") } }
    : {};
  const sides: [TargetName, string, Peer][] = [
    ["floor", FLOOR_SCENARIO, {}],
    ["edge", EDGE_SCENARIO, {}],
    ["plain", "plain proxying", portkeyPeer],
    ["full", "full features", {}],
  ];
  return sides
    .filter(([name]) => ran(rounds, name))
    .map(([name, what, peer]) =>
      benchRow({
        system: SYSTEM,
        scenario: scenario(what),
        metric: "streams failed or unfinished",
        unit: "streams",
        direction: "lower-is-better",
        value: failed(name),
        ...peer,
      }),
    );
}

export function latencyRows(levels: readonly LevelRuns[]): BenchResult[] {
  const rows: BenchResult[] = [];
  for (const level of levels) {
    const { concurrency, rounds } = level;
    rows.push(...errorRows(concurrency, rounds));
    const scenario = (what: string) => `${concurrency} streams, ${what}`;
    for (const [metric, key, point] of POINTS) {
      const value = medianOf(rounds, "direct", (run) => at(run, key, point));
      if (value === undefined) break;
      rows.push(
        benchRow({ system: SYSTEM, scenario: scenario("simulator direct"), metric, unit: "ms", value }),
      );
    }
    for (const [metric, key, point] of POINTS) {
      const noise = aaNoise(level, key, point);
      if (noise === undefined) break;
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("simulator direct, again at the round's end (A/A)"),
          metric: `${metric}, |difference| from the first direct run`,
          unit: "ms",
          value: noise,
        }),
      );
    }
    const addedRows = (
      name: "floor" | "edge" | "plain" | "full",
      what: string,
      peer?: "portkey" | "plain",
    ) => {
      for (const [metric, key, point] of POINTS) {
        const value = added(rounds, name, key, point);
        if (value === undefined) break;
        const peerValue = peer === undefined ? undefined : added(rounds, peer, key, point);
        const peerName = peer === "portkey" ? "portkey 1.15.2" : "our plain proxying";
        rows.push(
          benchRow({
            system: SYSTEM,
            scenario: scenario(what),
            metric: `added ${metric}`,
            unit: "ms",
            value,
            ...(peerValue === undefined ? {} : { peer: { name: peerName, value: peerValue } }),
          }),
        );
      }
    };
    addedRows("floor", FLOOR_SCENARIO);
    addedRows("edge", EDGE_SCENARIO);
    addedRows("plain", "plain proxying", "portkey");
    addedRows("full", "full features", "plain");
    const kib = (name: TargetName) => medianOf(rounds, name, (run) => run.bytesPerStream / 1024);
    const [plainKib, portkeyKib, fullKib] = [kib("plain"), kib("portkey"), kib("full")];
    if (plainKib !== undefined)
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("plain proxying"),
          metric: "RSS per open stream",
          unit: "KiB",
          value: plainKib,
          ...(portkeyKib === undefined ? {} : { peer: { name: "portkey 1.15.2", value: portkeyKib } }),
        }),
      );
    if (fullKib !== undefined)
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("full features"),
          metric: "RSS per open stream",
          unit: "KiB",
          value: fullKib,
        }),
      );
    const cpu = (name: TargetName) => medianOf(rounds, name, (run) => run.cpuMsPerStream);
    const cpuRow = (name: "direct" | "floor" | "edge" | "plain" | "full", what: string, peer?: "portkey") => {
      const value = cpu(name);
      const peerValue = peer === undefined ? undefined : cpu(peer);
      if (value === undefined) return;
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario(what),
          metric: "CPU per stream",
          unit: "ms",
          value,
          ...(peerValue === undefined ? {} : { peer: { name: "portkey 1.15.2", value: peerValue } }),
        }),
      );
    };
    cpuRow("direct", "simulator direct");
    cpuRow("floor", FLOOR_SCENARIO);
    cpuRow("edge", EDGE_SCENARIO);
    cpuRow("plain", "plain proxying", "portkey");
    cpuRow("full", "full features");
  }
  return rows;
}

/**
 * One line per concurrency and percentile: plain proxying's added TTFT and total against
 * Portkey's × 0.5. Where the rounds ran an A/A direct call, a Portkey overhead within its noise
 * is not a ratio to judge: both within it, not judged; ours above it, not met.
 */
export function goalLines(levels: readonly LevelRuns[]): string[] {
  const lines: string[] = [];
  for (const level of levels) {
    const { concurrency, rounds } = level;
    for (const [metric, key, point] of POINTS) {
      const ours = added(rounds, "plain", key, point);
      const theirs = added(rounds, "portkey", key, point);
      if (ours === undefined || theirs === undefined) {
        lines.push(
          `goal, ${concurrency} streams: not judged (no round measured a whole stream on each; see the errors)`,
        );
        break;
      }
      if (theirs <= 0) {
        // Portkey's percentile at or under the direct call's: its overhead is below this run's noise.
        lines.push(
          `goal, ${concurrency} streams, added ${metric}: not judged (Portkey ${theirs} ms: within noise)`,
        );
        continue;
      }
      const noise = aaNoise(level, key, point);
      if (noise !== undefined && theirs <= noise) {
        // The direct call differed from itself by as much as Portkey adds: Portkey's overhead is
        // not measurable here. Ours within the noise too: nothing to judge; above it: ours is
        // measurable where theirs is not, which ≤ 0.5× theirs cannot be.
        lines.push(
          ours <= noise
            ? `goal, ${concurrency} streams, added ${metric}: not judged (ours ${ours} ms and Portkey ${theirs} ms both within the A/A noise: the direct call differed from itself by ${noise} ms)`
            : `goal, ${concurrency} streams, added ${metric}: ours ${ours} ms vs Portkey ${theirs} ms, within the A/A noise of ${noise} ms while ours is above it — ≤ ${GOAL_FACTOR}× Portkey's: NOT met`,
        );
        continue;
      }
      const met = ours <= GOAL_FACTOR * theirs;
      const aaNote = noise === undefined ? "" : `; A/A noise ${noise} ms`;
      const floor = added(rounds, "floor", key, point);
      const edge = added(rounds, "edge", key, point);
      const floorNote =
        (floor === undefined ? "" : `; a bare Node relay adds ${floor} ms`) +
        (edge === undefined ? "" : `; the relay behind the shared edge ${edge} ms`);
      lines.push(
        `goal, ${concurrency} streams, added ${metric}: ours ${ours} ms vs Portkey ${theirs} ms (${rounds.length === 1 ? "1 round" : `medians of ${rounds.length} rounds`}${aaNote}${floorNote}) — ≤ ${GOAL_FACTOR}× Portkey's: ${met ? "met" : "NOT met"}`,
      );
    }
  }
  return lines;
}

/**
 * The bench's parts that can break without running it (a run needs both engines, wrk and
 * minutes): its flags — defaults, the scenario subset, bounds refused by name — and the reads
 * report: every run's figures beside their median, the goal judged on the median. (Its open-loop
 * generator process is lab's, tested in packages/lab/test/http-open-loop.test.ts.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { benchHelp, parseBenchArgs } from "../bench/main.ts";
import { DESIGNS, type DesignRuns, type LoopRun, loopRate, readReport } from "../bench/read-report.ts";

test("the bench's flags: both scenarios by default, a subset by name, bounds refused by name", () => {
  const defaults = parseBenchArgs([]);
  assert.deepEqual(defaults.scenarios, ["reads", "fanout"]);
  assert.equal(defaults.users, 20_000);
  assert.equal(defaults.celebrityFollowers, 1_000);
  assert.equal(defaults.repeats, 3);
  assert.equal(parseBenchArgs(["--repeats", "5"]).repeats, 5);
  assert.deepEqual(parseBenchArgs(["--scenarios", "reads"]).scenarios, ["reads"]);
  assert.throws(() => parseBenchArgs(["--scenarios", "writes"]), /scenarios/);
  assert.throws(() => parseBenchArgs(["--duration-s", "0"]), /duration/);
  assert.throws(() => parseBenchArgs(["--repeats", "0"]), /repeats/);
  assert.match(benchHelp, /pure pull/);
  assert.match(benchHelp, /median/);
});

test("the open loop's rate is 70% of the median maximum", () => {
  // The open loop's rate: 70% of the median maximum, so one lucky maximum does not set it.
  assert.equal(
    loopRate(
      [
        { perS: 5_000, errors: 0 },
        { perS: 9_000, errors: 0 },
        { perS: 4_000, errors: 0 },
      ],
      2,
    ),
    3_500,
  );
  assert.equal(loopRate([{ perS: 1, errors: 0 }], 2), 2);
});

function loop(p99Ms: number, extra: Partial<LoopRun> = {}): LoopRun {
  return {
    p50Ms: 2,
    p99Ms,
    achievedRatePerS: 3_500,
    askedPerS: 3_500,
    sentPerS: 3_500,
    late: 0,
    dropped: 0,
    errors: 0,
    load1: 1.5,
    ...extra,
  };
}

function runs(p99s: readonly number[], maxima: readonly number[]): DesignRuns {
  return { maxima: maxima.map((perS) => ({ perS, errors: 0 })), loops: p99s.map((p) => loop(p)) };
}

const shape = {
  users: 20_000,
  authors: 1_937,
  alpha: 0.7,
  readers: 2_000,
  page: 20,
  connections: 32,
  celebrityFollowers: 1_000,
  generatorProcesses: 2,
};
const stale = { readers: 100, seeing: 0, maxAgeS: 40 };

function report(hybridP99s: readonly number[]) {
  const results = new Map(
    DESIGNS.map((d) => [d, runs(d === "hybrid" ? hybridP99s : [30, 31, 32], [5_000, 6_000, 5_500])]),
  );
  return readReport(shape, results, [loop(1.8), loop(2.1), loop(2)], stale);
}

test("the reads report says how busy the machine was through each hybrid run, and the server's share of a core", () => {
  const busy = [0.78, 0.81, 0.9];
  const loops = [15.2, 85.4, 18.9].map((p, i) =>
    loop(p, { machineBusy: busy[i]!, serverCores: 0.6 + i / 10 }),
  );
  const results = new Map(
    DESIGNS.map((d) => [
      d,
      d === "hybrid"
        ? { ...runs([], [5_000, 6_000, 5_500]), loops }
        : runs([30, 31, 32], [5_000, 6_000, 5_500]),
    ]),
  );
  const floors = [1.8, 2.1, 2].map((p) => loop(p, { machineBusy: 0.3 }));
  const { rows, goals } = readReport(shape, results, floors, stale);
  assert.match(
    goals[0]!,
    /\(runs 15\.2, 85\.4, 18\.9; the machine 78, 81, 90% busy; the generators' floor 2\.0 ms\) — met$/,
  );
  const value = (metric: string) => rows.find((r) => r.metric === metric)?.value;
  assert.equal(value("machine busy through run 3 (all processes, all cores)"), 90);
  assert.equal(value("the hybrid's process through run 2, share of one core"), 70);
  assert.equal(value("machine busy (all processes, all cores), median of 3 runs"), 30);
  // A run that could not read /proc: no clause, rather than a wrong one.
  const unread = new Map(results);
  unread.set("hybrid", { ...results.get("hybrid")!, loops: [loops[0]!, loop(85.4), loops[2]!] });
  assert.match(
    readReport(shape, unread, floors, stale).goals[0]!,
    /\(runs 15\.2, 85\.4, 18\.9; the generators' floor/,
  );
});

test("the reads report: every run's figures and their median; the goal is judged on the median, not on one run", () => {
  // One bad run among three: the median is under the goal.
  const good = report([15.2, 85.4, 18.9]);
  assert.match(
    good.goals[0]!,
    /median of 3 runs: 18\.9 ms \(runs 15\.2, 85\.4, 18\.9; the generators' floor 2\.0 ms\) — met$/,
  );
  // One good run among three: the median is over it.
  const bad = report([19.5, 85.4, 36.9]);
  assert.match(bad.goals[0]!, /median of 3 runs: 36\.9 ms .* — NOT met$/);

  const row = (metric: string, scenario?: RegExp) =>
    good.rows.find((r) => r.metric === metric && (scenario === undefined || scenario.test(r.scenario)));
  assert.equal(row("latency p99 at 70% of max (open loop), median of 3 runs")?.value, 18.9);
  assert.equal(row("latency p99 at 70% of max, run 2")?.value, 85.4);
  assert.equal(row("reads (wrk max, c=32), median of 3 runs", /hybrid \(/)?.value, 5_500);
  assert.equal(row("reads (wrk max, c=32), run 1", /hybrid \(/)?.value, 5_000);
  assert.equal(row("latency p99, median of 3 runs", /generators alone/)?.value, 2);
  // Each peer beside the hybrid on medians, and each of its runs in its own rows.
  const push = row("latency p99 at 70% of each median max, median of 3 runs", /vs pure push/);
  assert.equal(push?.peer_value, 31);
  assert.equal(row("latency p99 at 70% of the median max, run 3", /pure push: each run/)?.value, 32);
});

import assert from "node:assert/strict";
import { test } from "node:test";
import {
  benchFormat,
  benchRow,
  compare,
  formatNumber,
  median,
  medianBy,
  renderBench,
  renderMarkdown,
  rowsFromLoad,
  toJsonLine,
} from "../src/bench-report.ts";
import { runOpenLoop } from "../src/load-generator.ts";

const ROW_KEYS = ["system", "scenario", "metric", "unit", "value"];
const PEER_KEYS = [...ROW_KEYS, "peer", "peer_value", "ratio"];

test("compare words the ratio by direction: lower latency and higher throughput are both faster", () => {
  const latency = compare(5, 9, "lower-is-better", ["faster", "slower"])!;
  assert.equal(latency.ratio, 5 / 9);
  assert.equal(latency.verdict, "1.8× faster");
  assert.equal(compare(18_000, 10_000, "higher-is-better", ["faster", "slower"])!.verdict, "1.8× faster");
  assert.equal(compare(10_000, 25_000, "higher-is-better", ["faster", "slower"])!.verdict, "2.5× slower");
  assert.equal(compare(120, 10, "lower-is-better")!.verdict, "12× worse");
  assert.equal(compare(100, 100.2, "lower-is-better")!.verdict, "on par");
  assert.equal(compare(0, 10, "lower-is-better"), undefined);
  assert.equal(compare(10, Number.NaN, "lower-is-better"), undefined);
});

test("benchRow infers the direction from the unit and computes the ratio ours/peer", () => {
  const row = benchRow({
    system: "cache",
    scenario: "get",
    metric: "latency p99",
    unit: "ms",
    value: 1.5,
    peer: { name: "redis", value: 2.7 },
  });
  assert.equal(row.direction, "lower-is-better");
  assert.equal(row.ratio, 0.5556);
  assert.equal(
    benchRow({ system: "s", scenario: "x", metric: "m", unit: "req/s", value: 1 }).direction,
    "higher-is-better",
  );
  assert.throws(() => benchRow({ system: "s", scenario: "x", metric: "m", unit: "widgets", value: 1 }), {
    code: "LAB_BENCH_INVALID",
  });
  assert.throws(() => benchRow({ system: "s", scenario: "x", metric: "m", unit: "ms", value: Number.NaN }), {
    code: "LAB_BENCH_INVALID",
  });
  assert.throws(() => benchRow({ system: "", scenario: "x", metric: "m", unit: "ms", value: 1 }), {
    code: "LAB_BENCH_INVALID",
  });
});

test("JSON lines carry exactly the documented keys, the peer ones only when a peer ran", () => {
  const alone = benchRow({
    system: "feed",
    scenario: "fan-out",
    metric: "throughput",
    unit: "req/s",
    value: 1200,
  });
  const paired = benchRow({
    system: "feed",
    scenario: "fan-out",
    metric: "throughput",
    unit: "req/s",
    value: 1800,
    peer: { name: "naive", value: 1000 },
  });
  assert.deepEqual(Object.keys(JSON.parse(toJsonLine(alone))), ROW_KEYS);
  assert.deepEqual(JSON.parse(toJsonLine(paired)), {
    system: "feed",
    scenario: "fan-out",
    metric: "throughput",
    unit: "req/s",
    value: 1800,
    peer: "naive",
    peer_value: 1000,
    ratio: 1.8,
  });
  assert.deepEqual(Object.keys(JSON.parse(toJsonLine(paired))), PEER_KEYS);
  const lines = renderBench([alone, paired], "json").split("\n");
  assert.equal(lines.length, 2);
  assert.ok(!lines[0]!.includes("direction"));
});

test("the markdown table is aligned, right-aligns numbers and says the verdict in words", () => {
  const rows = [
    benchRow({
      system: "cache",
      scenario: "get 1 KiB",
      metric: "throughput",
      unit: "req/s",
      value: 91_000,
      peer: { name: "redis", value: 50_000 },
    }),
    benchRow({
      system: "cache",
      scenario: "get 1 KiB",
      metric: "latency p99",
      unit: "ms",
      value: 4.2,
      peer: { name: "redis", value: 2.1 },
    }),
    benchRow({ system: "cache", scenario: "memory", metric: "rss", unit: "MiB", value: 40 }),
  ];
  const table = renderMarkdown(rows);
  const lines = table.split("\n");
  assert.equal(lines.length, 5);
  assert.equal(new Set(lines.map((l) => l.length)).size, 1, `every line equally wide:\n${table}`);
  assert.match(
    lines[0]!,
    /^\| system \| scenario +\| metric +\| unit +\| +value \| peer +\| peer value \| ratio \| verdict +\|$/,
  );
  assert.match(lines[1]!, /^\| -+ \| -+ \| -+ \| -+ \| -+: \| -+ \| -+: \| -+: \| -+ \|$/);
  assert.match(lines[2]!, /\| 91,000 \| redis \| +50,000 \| +1\.82 \| 1\.8× faster/);
  assert.match(lines[3]!, /\| +4\.20 \| redis \| +2\.10 \| +2\.00 \| 2\.0× slower/);
  assert.match(lines[4]!, /\| +40 \| +\| +\| +\| +\|$/);
  assert.equal(renderBench(rows, "markdown"), table);
});

test("without any peer the table has no peer columns", () => {
  const table = renderMarkdown([
    benchRow({ system: "a", scenario: "b", metric: "c", unit: "ms", value: 0.25 }),
  ]);
  assert.equal(table.split("\n")[0], "| system | scenario | metric | unit | value |");
  assert.match(table, /\| 0\.250 \|$/);
});

test("--json on the command line selects JSON lines", () => {
  assert.equal(benchFormat(["node", "bench", "--json"]), "json");
  assert.equal(benchFormat(["node", "bench"]), "markdown");
});

test("formatNumber groups thousands and keeps about three significant digits", () => {
  assert.equal(formatNumber(1234567), "1,234,567");
  assert.equal(formatNumber(123.456), "123");
  assert.equal(formatNumber(12.345), "12.3");
  assert.equal(formatNumber(1.2345), "1.23");
  assert.equal(formatNumber(0.012345), "0.012");
});

test("rowsFromLoad turns a load report and its peer's into throughput, latency and error rows", async () => {
  const ours = await runOpenLoop({ ratePerS: 1_000, count: 20, task: async () => {} });
  const theirs = await runOpenLoop({ ratePerS: 1_000, count: 20, task: async () => {} });
  const rows = rowsFromLoad({ system: "lab", scenario: "noop" }, ours, { name: "noop-peer", report: theirs });
  assert.deepEqual(
    rows.map((r) => r.metric),
    ["throughput", "latency p50", "latency p90", "latency p99", "latency p99.9", "latency max", "errors"],
  );
  assert.ok(rows.every((r) => r.peer === "noop-peer" && r.system === "lab"));
  assert.equal(rows.find((r) => r.metric === "errors")!.value, 0);
  for (const line of renderBench(rows, "json").split("\n")) assert.doesNotThrow(() => JSON.parse(line));
});

test("medianBy: the middle run whole, the lower middle one of an even count; no runs throw", () => {
  const runs = [{ perS: 62_294 }, { perS: 27_149 }, { perS: 48_925 }];
  const byPerS = (run: { perS: number }) => run.perS;
  assert.equal(medianBy(runs, byPerS), runs[2], "the run itself, not a copy");
  assert.deepEqual(medianBy([{ perS: 3 }, { perS: 1 }], byPerS), { perS: 1 });
  assert.deepEqual(medianBy([{ perS: 5 }], byPerS), { perS: 5 });
  assert.deepEqual(runs.map(byPerS), [62_294, 27_149, 48_925], "the input keeps its order");
  assert.throws(() => medianBy([], byPerS), RangeError);
});

test("median: the middle run, the mean of the middle two for an even count, NaN for none", () => {
  assert.equal(median([85.4, 36.9, 44.4]), 44.4);
  assert.equal(median([3, 1, 4, 2]), 2.5);
  assert.equal(median([7]), 7);
  assert.ok(Number.isNaN(median([])));
});

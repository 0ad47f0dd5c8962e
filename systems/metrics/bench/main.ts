/**
 * `casebook bench metrics`: the named workload (`node-exporter-like`, bench/node-exporter-workload.ts)
 * written by remote-write from a separate load-generator process to our service, to Prometheus
 * 2.42 and to VictoriaMetrics 1.79.5, in one run, then three measurements on the same data:
 * ingest (samples per CPU-second of each side's processes), storage (bytes per sample on disk
 * after compaction, chunks + index, no WAL) and a dashboard of eight range queries (p50/p99,
 * the sides asked in turn). The issue's goals are printed beside the figures. Markdown table on
 * stdout, JSON lines with --json, progress on stderr.
 *
 * @example
 * // node systems/metrics/bench/main.ts --hosts 10 --hours 3 --json
 */

import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, medianBy, renderBench } from "@casebook/lab/bench-report";
import { findRow, goalLine, scenarioRows } from "@casebook/lab/bench-rows";
import { findExecutable } from "@casebook/lab/executables";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { errors } from "../src/errors.ts";
import {
  type BenchSide,
  FLOOR_DECODES,
  type FloorDecode,
  type SideName,
  type StorageReading,
  startOurs,
  startPrometheus,
  startStreamFloor,
  startVictoriaMetrics,
} from "./bench-sides.ts";
import { askPanel, dashboard, type Panel } from "./dashboard.ts";
import { WORKLOAD_NAME } from "./node-exporter-workload.ts";
import type { Generated, SendCommand, SendResult, WarmedUp } from "./remote-write-loader.ts";

const SYSTEM = "metrics";
const loaderEntry = new URL("./remote-write-loader.ts", import.meta.url);
const SIDES: readonly SideName[] = ["metrics", "stream-floor", "prometheus", "victoria-metrics"];
const SCENARIOS = ["ingest", "storage", "query"] as const;
type Scenario = (typeof SCENARIOS)[number];
/** The Debian package each side needs beyond Node (ours installs nats-server in .ci/engines.sh). */
const PROGRAMS: Readonly<Record<Exclude<SideName, "metrics">, string>> = {
  "stream-floor": "nats-server",
  prometheus: "prometheus",
  "victoria-metrics": "victoria-metrics",
};
/** Bound on one loader answer: generating or sending the whole workload to one side. */
const LOADER_ANSWER_TIMEOUT_MS = 1_800_000;
/** After the last sample is stored, the side's CPU is read once it has been quiet this many polls… */
const QUIET_POLLS = 2;
const QUIET_POLL_MS = 500;
/** …using less than this in a poll; or after MAX_SETTLE_MS anyway. */
const QUIET_CPU_S = 0.03;
const MAX_SETTLE_MS = 30_000;

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly hosts: number;
  readonly hours: number;
  readonly intervalS: number;
  readonly seed: number;
  readonly hostsPerRequest: number;
  readonly scrapesPerRequest: number;
  readonly concurrency: number;
  readonly warmUpPercent: number;
  readonly ingestRuns: number;
  readonly queryRuns: number;
  readonly sides: readonly SideName[];
  readonly scenarios: readonly Scenario[];
  readonly cpuProfDir: string;
  readonly floorDecode: FloorDecode;
}

const cli = defineBenchArgs({
  flags: {
    hosts: flag.integer({ min: 1, max: 2_000, default: 10, help: "hosts in the fleet, 100 series each" }),
    hours: flag.integer({
      min: 1,
      max: 48,
      default: 3,
      help: "hours of data, ending a minute before the run",
    }),
    intervalS: flag.integer({ min: 1, max: 300, default: 15, help: "scrape interval, seconds" }),
    seed: flag.integer({ min: 0, max: 2 ** 31, default: 1, help: "the generator's seed" }),
    hostsPerRequest: flag.integer({ min: 1, max: 200, default: 5, help: "hosts per remote-write request" }),
    scrapesPerRequest: flag.integer({
      min: 1,
      max: 240,
      default: 4,
      help: "consecutive scrapes of each host per request\n(a request holds hosts × 100 × scrapes samples)",
    }),
    concurrency: flag.integer({ min: 1, max: 64, default: 4, help: "requests in flight per side" }),
    warmUpPercent: flag.integer({
      min: 0,
      max: 90,
      default: 20,
      help: "the ingest's warm-up: the share of the rounds left out of the\nsteady samples per CPU-second (0: no steady row)",
    }),
    ingestRuns: flag.integer({
      min: 1,
      max: 20,
      default: 1,
      help: "times the ingest is measured, every side started afresh on empty storage\neach time, the sides' order rotated; each side's row is its median run\n(by steady samples per CPU-second; an odd count has one)",
    }),
    queryRuns: flag.integer({ min: 1, max: 1_000, default: 20, help: "timed runs of each panel per side" }),
    sides: flag.choiceList(SIDES, {
      help: "comma-separated subset of the sides (default all; a peer not installed is skipped, said on stderr)",
    }),
    scenarios: flag.choiceList(SCENARIOS, {
      help: "comma-separated subset of the scenarios (default all); the data is written to\nevery side either way — without ingest, unmeasured",
    }),
    floorDecode: flag.choice(FLOOR_DECODES, {
      default: "none",
      value: "WHERE",
      help: "what the floor decodes, nothing kept: ingest (each body as it\narrives) or every-reader (there and in each of its three consumers)\n— what reading the samples costs beside the hop",
    }),
    cpuProfDir: flag.string({
      default: "",
      value: "DIR",
      help: "write our service's V8 CPU profile here (NODE_OPTIONS=--cpu-prof)",
    }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `metrics bench — remote-write ingest, bytes on disk and a dashboard's queries,
ours beside Prometheus 2.42 and VictoriaMetrics 1.79.5 on the same data

Usage
  npx casebook bench metrics [options]

The workload (${WORKLOAD_NAME}): --hosts hosts of 100 series each, shaped like node-exporter's —
counters that grow with occasional resets (a host reboots), gauges that wander, an HTTP
histogram with 10 le buckets — scraped every --interval-s for --hours, from a seeded generator.
A separate load-generator process builds the remote-write 1.0 requests once (protobuf +
snappy) and plays the same bytes to every side: rounds of --scrapes-per-request scrapes,
one request per --hosts-per-request hosts, --concurrency in flight.

Scenarios (all in one run; --scenarios picks some)
  ingest    samples per CPU-second: samples acknowledged (ours: after the stream's ack) over
            the CPU-seconds of every process of the side from the first request until it has
            stored everything and gone quiet — ours: the service process (ingest, hot writer,
            rollup builder with DuckDB, alert evaluator) + its nats-server; Prometheus's process
            (--web.enable-remote-write-receiver); VictoriaMetrics's process. Wall samples/s too.
            Beside them the floor of any design with the issue's stream hop (bench/stream-floor.ts,
            ingest only): each request's body published as it arrived, as one message, to its
            own nats-server, and read and acked by three consumers, nothing decoded — the floor
            process + its nats-server (--floor-decode ingest or every-reader: the bodies decoded
            at the ingest, or there and in each consumer, nothing kept).
            And steady, after a warm-up: the sender stops after the first --warm-up-percent of
            the rounds until the side has stored them and gone quiet, and the samples after
            that count over the CPU-seconds after it — a server's cost per sample once running,
            without its first moments (a JIT compiling its hot code, every series created).
            With --ingest-runs N, all of it N times on sides started afresh, each side's median
            run in its rows (this VM's run-to-run spread is ±10–20%).
  storage   bytes per sample on disk, chunks + index, no WAL, after compaction: ours, its head
            compacted into a block (the service stopped, its TSDB opened by the bench);
            Prometheus, a snapshot with its head (admin API); VictoriaMetrics, data/ + indexdb/
            after /internal/force_flush and /internal/force_merge.
  query     eight range queries of a node dashboard (rate of counters, sum by, topk,
            histogram_quantile, avg_over_time of gauges, a ratio of gauges), each with its range
            and step, asked --query-runs times per side with the sides in turn; p50 and p99.

Goals (printed under the table): bytes/sample ≤ Prometheus's; ingest ≥ 0.5× VictoriaMetrics's
samples per CPU-second (steady, and the whole run beside it); every panel's p50 and p99 ≤ 2×
Prometheus's.

Options
${cli.flagHelp()}
`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

interface Target {
  readonly loader: SpawnedChild;
  readonly tmpDir: string;
  readonly sides: BenchSide[];
  close(): Promise<void>;
}

async function openTarget(): Promise<Target> {
  const tmpDir = await mkdtemp(join(tmpdir(), "casebook-metrics-bench-"));
  const loader = await spawnChild(loaderEntry, {
    ready: (line) => line.includes('"ready"'),
    lineTimeoutMs: LOADER_ANSWER_TIMEOUT_MS,
    echoStderr: true,
  });
  const sides: BenchSide[] = [];
  return {
    loader,
    tmpDir,
    sides,
    close: async () => {
      await loader.stop({ line: JSON.stringify({ cmd: "close" }) });
      for (const side of sides)
        await side.close().catch((error) => benchLog(`closing ${side.name}: ${error}`));
      await rm(tmpDir, { recursive: true, force: true });
    },
  };
}

function loadAverage(): string {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  } catch {
    return "n/a";
  }
}

async function ask<T>(loader: SpawnedChild, command: Record<string, unknown>): Promise<T> {
  loader.send(JSON.stringify(command));
  return JSON.parse(await loader.nextLine()) as T;
}

/** Starts the sides asked for (ours keeping its data under `tmpDir`) into `target.sides`. */
async function startSides(target: Target, args: BenchArgs, tmpDir: string): Promise<void> {
  for (const name of args.sides) {
    if (name === "stream-floor" && !args.scenarios.includes("ingest")) continue; // it only ingests
    if (name !== "metrics" && findExecutable(PROGRAMS[name]) === undefined) {
      benchLog(
        `${name}: ${PROGRAMS[name]} not installed (apt-get install -y ${PROGRAMS[name]}); its side is skipped`,
      );
      continue;
    }
    benchLog(`starting ${name}`);
    const nodeOptions = args.cpuProfDir ? `--cpu-prof --cpu-prof-dir=${args.cpuProfDir}` : undefined;
    const side =
      name === "metrics"
        ? await startOurs({ tmpDir, ...(nodeOptions ? { nodeOptions } : {}) })
        : name === "stream-floor"
          ? await startStreamFloor(args.floorDecode)
          : name === "prometheus"
            ? await startPrometheus()
            : await startVictoriaMetrics();
    target.sides.push(side);
  }
}

/** Stops every side of `target` (a run over, the next to start afresh). */
async function closeSides(target: Target): Promise<void> {
  for (const side of target.sides.splice(0))
    await side.close().catch((error) => benchLog(`closing ${side.name}: ${error}`));
}

/** `list` from position `by` (mod its length) round to the start: run `by`'s order of the sides. */
function rotated<T>(list: readonly T[], by: number): T[] {
  const at = list.length === 0 ? 0 : by % list.length;
  return [...list.slice(at), ...list.slice(0, at)];
}

interface IngestResult {
  readonly sent: SendResult;
  readonly cpuS: number | undefined;
  readonly cpuAtAckS: number | undefined;
  /** After the warm-up mark: the samples acked and the CPU-seconds used, to quiet both times. */
  readonly steady: { readonly acked: number; readonly cpuS: number } | undefined;
}

/** CPU-seconds once the side has used less than QUIET_CPU_S in QUIET_POLLS polls in a row. */
async function quietCpu(side: BenchSide): Promise<number | undefined> {
  const deadline = performance.now() + MAX_SETTLE_MS;
  let last = side.cpuSeconds();
  for (let quiet = 0; quiet < QUIET_POLLS && performance.now() < deadline; ) {
    await sleep(QUIET_POLL_MS);
    const now = side.cpuSeconds();
    if (now === undefined || last === undefined) return undefined;
    quiet = now - last < QUIET_CPU_S ? quiet + 1 : 0;
    last = now;
  }
  return last;
}

async function ingest(
  side: BenchSide,
  target: Target,
  args: BenchArgs,
  generated: Generated,
): Promise<IngestResult> {
  benchLog(
    `${side.name}: writing ${generated.samples} samples in ${generated.requests} requests (load ${loadAverage()})`,
  );
  const before = side.cpuSeconds();
  const partsBefore = side.cpuParts?.();
  // CLOCK_MONOTONIC, as V8's CPU profiles stamp their samples: the window to cut a profile to.
  const windowStartUs = process.hrtime.bigint() / 1_000n;
  target.loader.send(
    JSON.stringify({
      cmd: "send",
      url: side.writeUrl,
      headers: side.writeHeaders,
      concurrency: args.concurrency,
      warmUpPercent: args.warmUpPercent,
    } satisfies SendCommand),
  );
  let answer = JSON.parse(await target.loader.nextLine()) as SendResult | WarmedUp;
  let warm: { acked: number; cpuS: number | undefined } | undefined;
  if ("warmedUp" in answer) {
    await side.stored(answer.acked);
    warm = { acked: answer.acked, cpuS: await quietCpu(side) };
    benchLog(
      `${side.name}: warmed up — ${answer.acked} samples stored, CPU read once quiet ` +
        `(at ${process.hrtime.bigint() / 1_000n} µs monotonic: where a profile's steady part starts)`,
    );
    target.loader.send(JSON.stringify({ cmd: "resume" }));
    answer = JSON.parse(await target.loader.nextLine()) as SendResult | WarmedUp;
  }
  if ("warmedUp" in answer) throw new Error("loader: a second warm-up mark");
  const sent = answer;
  const atAck = side.cpuSeconds();
  if (sent.failedRequests > 0)
    benchLog(`${side.name}: ${sent.failedRequests} requests failed; first: ${sent.firstError}`);
  await side.stored(sent.acked);
  const after = await quietCpu(side);
  const used = (end: number | undefined) =>
    before === undefined || end === undefined ? undefined : end - before;
  const steady =
    warm?.cpuS === undefined || after === undefined
      ? undefined
      : { acked: sent.acked - warm.acked, cpuS: after - warm.cpuS };
  const result = { sent, cpuS: used(after), cpuAtAckS: used(atAck), steady };
  benchLog(
    `${side.name}: ${sent.acked} acked in ${sent.wallMs} ms (${sent.retries} retries); ` +
      `${result.cpuAtAckS?.toFixed(2)} CPU-s at the last ack, ${result.cpuS?.toFixed(2)} once stored and quiet ` +
      `(${side.counted}; load ${loadAverage()})` +
      (steady ? `; after the warm-up: ${steady.acked} samples, ${steady.cpuS.toFixed(2)} CPU-s` : ""),
  );
  const partsAfter = side.cpuParts?.();
  if (partsBefore !== undefined && partsAfter !== undefined) {
    const spent = [...partsAfter]
      .map(([part, seconds]) => [part, seconds - (partsBefore.get(part) ?? 0)] as const)
      .filter(([, seconds]) => seconds >= 0.01)
      .toSorted((a, b) => b[1] - a[1]);
    benchLog(
      `${side.name}: CPU-s by process/thread: ${spent.map(([p, s]) => `${p} ${s.toFixed(2)}`).join(", ")}`,
    );
    benchLog(
      `${side.name}: ingest window ${windowStartUs}..${process.hrtime.bigint() / 1_000n} µs (monotonic)`,
    );
  }
  return result;
}

/** Without the ingest scenario: the same writes, unmeasured, until the side has stored them. */
async function load(side: BenchSide, target: Target, args: BenchArgs): Promise<void> {
  const sent = await ask<SendResult>(target.loader, {
    cmd: "send",
    url: side.writeUrl,
    headers: side.writeHeaders,
    concurrency: args.concurrency,
  });
  if (sent.failedRequests > 0)
    benchLog(`${side.name}: ${sent.failedRequests} requests failed; first: ${sent.firstError}`);
  await side.stored(sent.acked);
  benchLog(`${side.name}: ${sent.acked} samples stored, unmeasured (load ${loadAverage()})`);
}

interface PanelTimings {
  readonly ms: Map<SideName, number[]>;
  readonly errors: Map<SideName, number>;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function queryDashboard(
  sides: readonly BenchSide[],
  panels: readonly Panel[],
  runs: number,
): Promise<PanelTimings[]> {
  const timings = panels.map(() => ({
    ms: new Map<SideName, number[]>(),
    errors: new Map<SideName, number>(),
  }));
  benchLog(
    `dashboard: ${panels.length} panels × ${runs} runs per side, sides in turn (load ${loadAverage()})`,
  );
  // Run 0 warms each side's caches of the data (pages, postings) and is not timed.
  for (let run = 0; run <= runs; run++) {
    for (const [i, panel] of panels.entries()) {
      for (const side of sides) {
        const answer = await askPanel(side, panel);
        if (run === 0) {
          benchLog(
            answer.ok
              ? `  ${side.name} · ${panel.name}: ${answer.series} series, ${answer.points} points${answer.tiers ? ` (tiers ${answer.tiers})` : ""}`
              : `  ${side.name} · ${panel.name}: ${answer.error}`,
          );
          continue;
        }
        const t = timings[i]!;
        if (answer.ok) t.ms.set(side.name, [...(t.ms.get(side.name) ?? []), answer.ms]);
        else t.errors.set(side.name, (t.errors.get(side.name) ?? 0) + 1);
      }
    }
  }
  return timings;
}

async function storage(sides: readonly BenchSide[]): Promise<Map<SideName, StorageReading>> {
  const readings = new Map<SideName, StorageReading>();
  // The peers are read while they run; ours after its service stops (the bench opens its TSDB).
  for (const side of sides.filter((s) => s.name !== "metrics")) readings.set(side.name, await side.storage());
  const ours = sides.find((s) => s.name === "metrics");
  if (ours) {
    await ours.close();
    readings.set("metrics", await ours.storage());
  }
  for (const [name, reading] of readings)
    benchLog(
      `${name}: ${reading.bytes} bytes on disk, ${reading.samples ?? "?"} samples in its blocks (${reading.how})`,
    );
  return readings;
}

function describeWorkload(args: BenchArgs, generated: Generated): string {
  return `${WORKLOAD_NAME}: ${generated.series} series × ${args.hours} h at ${args.intervalS} s`;
}

function buildRows(
  args: BenchArgs,
  generated: Generated,
  ingests: Map<SideName, IngestResult>,
  disk: Map<SideName, StorageReading>,
  panels: readonly Panel[],
  timings: readonly PanelTimings[],
): BenchResult[] {
  const rows: BenchResult[] = [];
  const peers = (["victoria-metrics", "prometheus"] as const).filter((p) => ingests.has(p) || disk.has(p));
  const workload = describeWorkload(args, generated);
  const ours = ingests.get("metrics");
  const perCpu = (r: IngestResult | undefined) => samplesPerCpu(r).whole;
  const steadyPerCpu = (r: IngestResult | undefined) => samplesPerCpu(r).steady;
  const perWall = (r: IngestResult | undefined) => (r ? r.sent.acked / (r.sent.wallMs / 1000) : undefined);
  for (const peer of peers.length > 0 ? peers : [undefined]) {
    const row = scenarioRows({
      system: SYSTEM,
      scenario: `ingest: ${workload}, remote-write c=${args.concurrency}`,
      ...(peer ? { peer } : {}),
      tidy: true,
    });
    const theirs = peer ? ingests.get(peer) : undefined;
    const ourSteady = steadyPerCpu(ours);
    if (ourSteady !== undefined) {
      const peerSteady = steadyPerCpu(theirs);
      rows.push(
        row.value(
          `samples per CPU-second, steady (after the first ${args.warmUpPercent}% of rounds)`,
          "samples/CPU-s",
          ourSteady,
          { direction: "higher-is-better", ...(peerSteady !== undefined ? { peer: peerSteady } : {}) },
        ),
      );
    }
    const ourPerCpu = perCpu(ours);
    if (ourPerCpu !== undefined) {
      const peerPerCpu = perCpu(theirs);
      rows.push(
        row.value("samples per CPU-second", "samples/CPU-s", ourPerCpu, {
          direction: "higher-is-better",
          ...(peerPerCpu !== undefined ? { peer: peerPerCpu } : {}),
        }),
      );
    }
    const ourWall = perWall(ours);
    const peerWall = perWall(theirs);
    if (ourWall !== undefined)
      rows.push(
        row.value(
          "samples acked per second (wall)",
          "samples/s",
          ourWall,
          peerWall !== undefined ? { peer: peerWall } : {},
        ),
      );
    if (ours)
      rows.push(
        row.count(
          "failed requests",
          ours.sent.failedRequests,
          theirs ? { peer: theirs.sent.failedRequests } : {},
        ),
      );
  }
  rows.push(...floorRows(args, generated, ingests, peers));
  const ourDisk = disk.get("metrics");
  for (const peer of peers.length > 0 ? peers : [undefined]) {
    const theirs = peer ? disk.get(peer) : undefined;
    if (!ourDisk) break;
    const row = scenarioRows({
      system: SYSTEM,
      scenario: `storage: ${workload}, after compaction (chunks + index, no WAL)`,
      ...(peer ? { peer } : {}),
      tidy: true,
    });
    rows.push(
      row.value("bytes per sample", "B/sample", ourDisk.bytes / generated.samples, {
        direction: "lower-is-better",
        ...(theirs ? { peer: theirs.bytes / generated.samples } : {}),
      }),
    );
    rows.push(row.value("bytes on disk", "B", ourDisk.bytes, theirs ? { peer: theirs.bytes } : {}));
  }
  for (const [i, panel] of panels.entries()) {
    const t = timings[i]!;
    const rangeH = ((panel.endMs - panel.startMs) / 3_600_000).toFixed(2).replace(/\.?0+$/, "");
    const scenario = `query: ${panel.name} — ${panel.query} [${rangeH} h, step ${panel.stepS} s]`;
    const summary = (name: SideName) => {
      const ms = [...(t.ms.get(name) ?? [])].sort((a, b) => a - b);
      return ms.length === 0 ? undefined : { p50: percentile(ms, 50), p99: percentile(ms, 99) };
    };
    const ourMs = summary("metrics");
    for (const peer of (["prometheus", "victoria-metrics"] as const).filter(
      (p) => t.ms.has(p) || t.errors.has(p),
    )) {
      const row = scenarioRows({ system: SYSTEM, scenario, peer, tidy: true });
      const theirs = summary(peer);
      if (ourMs)
        rows.push(...row.percentiles("latency", ["p50", "p99"], ourMs, theirs ? { peer: theirs } : {}));
      rows.push(row.count("errors", t.errors.get("metrics") ?? 0, { peer: t.errors.get(peer) ?? 0 }));
    }
  }
  return rows;
}

/** Samples per CPU-second: steady (after the warm-up) and over the whole run, where measured. */
interface PerCpu {
  readonly steady?: number;
  readonly whole?: number;
}

/** Samples per CPU-second by which runs are ranked: steady, else the whole run's. */
function runScore(run: IngestResult): number {
  const perCpu = samplesPerCpu(run);
  return perCpu.steady ?? perCpu.whole ?? 0;
}

function samplesPerCpu(result: IngestResult | undefined): PerCpu {
  if (result === undefined) return {};
  return {
    ...(result.steady && result.steady.cpuS > 0 ? { steady: result.steady.acked / result.steady.cpuS } : {}),
    ...(result.cpuS ? { whole: result.sent.acked / result.cpuS } : {}),
  };
}

const FLOOR_SCENARIO = "ingest, the floor: the stream hop";
/** What the floor does beside the hop, as its rows and the goal's note say it. */
const FLOOR_WORK: Readonly<Record<FloorDecode, { scenario: string; note: string }>> = {
  none: {
    scenario: " alone (bodies as they arrive, three consumers, nothing decoded)",
    note: "the stream hop alone (the floor: no decoding, no storage)",
  },
  ingest: {
    scenario: " and the ingest's decoding (each body decoded as it arrives, three consumers, nothing kept)",
    note: "the stream hop and the ingest's decoding (the floor: nothing kept)",
  },
  "every-reader": {
    scenario: " and every reader decoding (at the ingest and in each of three consumers, nothing kept)",
    note: "the stream hop with the ingest and each consumer decoding every body (the floor: nothing kept)",
  },
};

/** The floor's samples per CPU-second beside each peer's, and ours beside the floor's. */
function floorRows(
  args: BenchArgs,
  generated: Generated,
  ingests: Map<SideName, IngestResult>,
  peers: readonly SideName[],
): BenchResult[] {
  const floor = samplesPerCpu(ingests.get("stream-floor"));
  if (floor.steady === undefined && floor.whole === undefined) return [];
  const rows: BenchResult[] = [];
  const scenario = `${FLOOR_SCENARIO}${FLOOR_WORK[args.floorDecode].scenario}: ${describeWorkload(args, generated)}`;
  const steadyMetric = `samples per CPU-second, steady (after the first ${args.warmUpPercent}% of rounds)`;
  // [the row's peer, the row's value, the peer's]: the floor beside each peer, then ours beside the floor.
  const pairs: Array<readonly [string, PerCpu, PerCpu]> = [
    ...peers.map((peer) => [peer, floor, samplesPerCpu(ingests.get(peer))] as const),
    ["ours (metrics) against the floor", samplesPerCpu(ingests.get("metrics")), floor] as const,
  ];
  for (const [peer, mine, theirs] of pairs) {
    if (theirs.steady === undefined && theirs.whole === undefined) continue;
    const row = scenarioRows({ system: SYSTEM, scenario, peer, tidy: true });
    for (const [metric, value, peerValue] of [
      [steadyMetric, mine.steady, theirs.steady],
      ["samples per CPU-second", mine.whole, theirs.whole],
    ] as const)
      if (value !== undefined)
        rows.push(
          row.value(metric, "samples/CPU-s", value, {
            direction: "higher-is-better",
            ...(peerValue !== undefined ? { peer: peerValue } : {}),
          }),
        );
  }
  return rows;
}

function goalLines(rows: readonly BenchResult[], floorDecode: FloorDecode): string[] {
  const lines: string[] = [];
  const bytes = findRow(rows, { metric: "bytes per sample", peer: "prometheus" });
  if (bytes?.peer_value !== undefined)
    lines.push(
      goalLine(
        "goal bytes/sample ≤ Prometheus's",
        `${bytes.value} vs ${bytes.peer_value} B/sample`,
        bytes.value <= bytes.peer_value,
      ),
    );
  const cpu = findRow(rows, { metric: "samples per CPU-second", peer: "victoria-metrics" });
  const steady = rows.find(
    (r) => r.metric.startsWith("samples per CPU-second, steady") && r.peer === "victoria-metrics",
  );
  const judged = steady?.ratio !== undefined ? steady : cpu;
  if (judged?.ratio !== undefined)
    lines.push(
      goalLine(
        "goal ingest ≥ 0.5× VictoriaMetrics's samples per CPU-second",
        judged === steady
          ? `steady ${judged.ratio.toFixed(2)}× (the whole run: ${cpu?.ratio?.toFixed(2) ?? "?"}×)`
          : `${judged.ratio.toFixed(2)}×`,
        judged.ratio >= 0.5,
      ),
    );
  const floor = rows.filter((r) => r.scenario.startsWith(FLOOR_SCENARIO) && r.peer === "victoria-metrics");
  const floorSteady = floor.find((r) => r.metric.startsWith("samples per CPU-second, steady"));
  const floorWhole = floor.find((r) => r.metric === "samples per CPU-second");
  if (floorSteady?.ratio !== undefined || floorWhole?.ratio !== undefined)
    lines.push(
      `  ${FLOOR_WORK[floorDecode].note} reaches steady ${floorSteady?.ratio?.toFixed(2) ?? "?"}× ` +
        `(the whole run: ${floorWhole?.ratio?.toFixed(2) ?? "?"}×): a ceiling for designs on this stream, here`,
    );
  const latencies = rows.filter(
    (r) => r.metric.startsWith("latency") && r.peer === "prometheus" && r.ratio !== undefined,
  );
  if (latencies.length > 0) {
    const worst = latencies.reduce((a, b) => (b.ratio! > a.ratio! ? b : a));
    const over = latencies.filter((r) => r.ratio! > 2).length;
    lines.push(
      goalLine(
        "goal every panel's p50 and p99 ≤ 2× Prometheus's",
        `worst ${worst.ratio!.toFixed(2)}× (${worst.scenario.split(" — ")[0]}, ${worst.metric}); ${over} of ${latencies.length} over 2×`,
        over === 0,
      ),
    );
  }
  return lines;
}

async function run(target: Target, args: BenchArgs, json: boolean): Promise<void> {
  const loadBefore = loadAverage();
  const intervalMs = args.intervalS * 1000;
  const scrapes = Math.round((args.hours * 3_600_000) / intervalMs);
  const endMs = Math.floor((Date.now() - 60_000) / intervalMs) * intervalMs;
  benchLog(
    `${SYSTEM} bench: generating ${args.hosts} hosts × 100 series × ${scrapes} scrapes (load ${loadBefore})`,
  );
  const generated = await ask<Generated>(target.loader, {
    cmd: "generate",
    shape: { hosts: args.hosts, scrapes, intervalMs, endMs, seed: args.seed },
    hostsPerRequest: args.hostsPerRequest,
    scrapesPerRequest: args.scrapesPerRequest,
  });
  benchLog(
    `generated in ${generated.generateMs} ms: ${generated.requests} requests, ${generated.rawBytes} B of protobuf → ` +
      `${generated.bodyBytes} B snappy (${(generated.bodyBytes / generated.samples).toFixed(2)} B/sample on the wire)`,
  );
  const measured = args.scenarios.includes("ingest");
  const runs = measured ? args.ingestRuns : 1;
  const bySide = new Map<SideName, IngestResult[]>();
  for (let run = 0; run < runs; run++) {
    if (runs > 1) benchLog(`${SYSTEM} bench: ingest run ${run + 1} of ${runs}`);
    const tmpDir = runs > 1 ? join(target.tmpDir, `run-${run + 1}`) : target.tmpDir;
    await mkdir(tmpDir, { recursive: true });
    await startSides(target, args, tmpDir);
    for (const side of rotated(target.sides, run)) {
      if (!measured) {
        await load(side, target, args);
        continue;
      }
      const result = await ingest(side, target, args, generated);
      bySide.set(side.name, [...(bySide.get(side.name) ?? []), result]);
    }
    // The last run's sides stay up: the dashboard and the storage are read from them.
    if (run < runs - 1) await closeSides(target);
  }
  const ingests = new Map<SideName, IngestResult>();
  for (const [name, results] of bySide) {
    ingests.set(name, medianBy(results, runScore));
    if (results.length > 1)
      benchLog(
        `${name}: samples per CPU-second by run (steady, else whole): ${results
          .map((r) => Math.round(runScore(r)))
          .join(", ")} — the median run in the rows`,
      );
  }
  const panels = args.scenarios.includes("query") ? dashboard(endMs, scrapes * intervalMs) : [];
  const stores = target.sides.filter((s) => !s.ingestOnly);
  const timings = panels.length > 0 ? await queryDashboard(stores, panels, args.queryRuns) : [];
  const disk = args.scenarios.includes("storage") ? await storage(stores) : new Map();
  const rows = buildRows(args, generated, ingests, disk, panels, timings);
  const loadAfter = loadAverage();
  if (json) {
    benchLog(
      `load average: ${loadBefore} at the start, ${loadAfter} at the end (${availableParallelism()} cores)`,
    );
    process.stdout.write(`${renderBench(rows, "json")}\n`);
    return;
  }
  const notes = [
    "",
    ...goalLines(rows, args.floorDecode),
    "",
    `Load average (1, 5, 15 min): ${loadBefore} at the start, ${loadAfter} at the end, on ${availableParallelism()} cores.`,
    `CPU counted: ${target.sides.map((s) => `${s.name} = ${s.counted}`).join("; ")}.`,
    ...(runs > 1
      ? [`Ingest: each side's median of ${runs} runs on sides started afresh (every run's figure on stderr).`]
      : []),
  ];
  process.stdout.write(`${renderBench(rows, "markdown")}\n${notes.join("\n")}\n`);
}

export const benchProgram: BenchProgram<BenchArgs, Target> = {
  name: SYSTEM,
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget,
  run,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);

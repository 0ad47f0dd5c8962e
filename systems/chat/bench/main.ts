/**
 * `casebook bench chat`: chat beside socket.io 4 + `@socket.io/redis-streams-adapter` and, when
 * Go and Debian's centrifuge sources are installed, beside Centrifugo's Go core (centrifuge
 * 0.15 on its Redis broker, the upper anchor), in one invocation, on the same Redis (and chat
 * also on PostgreSQL, where it writes every message before delivering it; socket.io writes
 * nothing durable, Centrifuge a bounded, expiring history). Each side runs as production
 * processes — chat's send service and N gateways, or N socket.io or centrifuge servers — and load
 * generators in processes of their own (bench/load-child.ts, `--load-processes`, each
 * holding a share of the clients) connect them round robin to the socket holders, put
 * them in groups and 1:1 conversations, then send open loop at a fixed rate, each message to
 * a random 1:1 conversation or group (`--direct-percent`) from a random member (one schedule,
 * drawn alike by every generator from the run's seed), and measure every delivery from the message's intended send time. Rows: connections held, deliveries/s, send →
 * deliver p50/p99, memory per connection, missing deliveries and send errors, each beside
 * socket.io's with the ratio, then beside Centrifuge's. Markdown table on stdout, JSON lines
 * with --json, progress on stderr.
 *
 * @example
 * // node systems/chat/bench/main.ts --clients 2000 --group-size 50 --rate-per-s 100 --json
 * // node systems/chat/bench/main.ts --sides chat,socketio   (no Go build)
 */

import { setTimeout as sleep } from "node:timers/promises";
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, formatNumber, medianBy, renderBench } from "@casebook/lab/bench-report";
import { goalLine, scenarioRows } from "@casebook/lab/bench-rows";
import { spawnChild } from "@casebook/lab/spawn-child";
import { errors } from "../src/errors.ts";
import { type BenchEngines, openBenchEngines } from "./bench-engines.ts";
import { type BenchSide, startCentrifugeSide, startChatSide, startSocketIoSide } from "./bench-sides.ts";
import { buildCentrifugeServer, type CentrifugeBuild } from "./centrifuge-build.ts";
import { type ChildRunResult, latencyHistogram, type ResumeResult, type RunResult } from "./load-child.ts";

const SYSTEM = "chat";
const PEER = "socket.io + redis-streams-adapter";
const CENTRIFUGE_PEER = "centrifuge 0.15 (Go) + Redis broker";
const SIDES = ["chat", "socketio", "centrifuge"] as const;
export type SideName = (typeof SIDES)[number];
const loadChildEntry = new URL("./load-child.ts", import.meta.url);
/** Bound on one answer of the load child (connecting thousands of clients on a loaded machine). */
const CHILD_LINE_TIMEOUT_MS = 120_000;
/** Connections opened per second by the load child: under chat's 500/s per gateway (CH-13). */
const CONNECT_PER_S = 400;
/** Let the servers settle (GC, buffers) before reading their memory. */
const SETTLE_MS = 1_000;
/** Lead time for every load process to get the run command before message 0 is due. */
const START_LEAD_MS = 300;

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly clients: number;
  readonly groupSize: number;
  readonly directPercent: number;
  readonly gateways: number;
  readonly loadProcesses: number;
  readonly maxRatePerS: number;
  readonly maxDurationMs: number;
  readonly maxRuns: number;
  readonly maxWarmupRuns: number;
  readonly loadPercent: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly drainMs: number;
  readonly resumeClients: number;
  /** chat and at least one peer, in SIDES' order. */
  readonly sides: readonly SideName[];
  /** --sides was given: a side it names that cannot run fails the bench instead of being left out. */
  readonly sidesExplicit: boolean;
}

const cli = defineBenchArgs({
  flags: {
    // The issue's workload: 10,000 clients, 80% of messages 1:1 and 20% to 500-member groups.
    clients: flag.integer({ min: 2, max: 20_000, default: 10_000, help: "connected clients per side" }),
    groupSize: flag.integer({
      min: 2,
      max: 1_024,
      default: 500,
      help: "members per group (fan-out = size − 1)",
    }),
    directPercent: flag.integer({
      min: 0,
      max: 100,
      default: 80,
      help: "% of messages sent 1:1 (each user is in two 1:1 conversations); the rest go to groups",
    }),
    gateways: flag.integer({ min: 1, max: 8, default: 2, help: "socket-holding processes per side" }),
    loadProcesses: flag.integer({
      min: 1,
      max: 8,
      default: 2,
      help: "load generator processes per side, each holding a share of the clients",
    }),
    maxRatePerS: flag.integer({
      min: 1,
      max: 50_000,
      // Quiet machine, 2026-12-03: 1,000 capped socket.io (it sent 953 of them: "not judged"); at
      // 2,000 it sent 1,139 and chat 902 — both below the offer, so both maxima are measured.
      default: 2_000,
      help: "msgs/s offered in the saturation run (above what either side sustains)",
    }),
    maxDurationMs: flag.integer({
      min: 200,
      max: 120_000,
      default: 4_000,
      help: "saturation run's send time",
    }),
    maxRuns: flag.integer({
      min: 1,
      max: 9,
      // One run per side read 28k–69k deliveries/s for chat and 35k–78k for socket.io at one
      // code on one VM (README, Bench): a single run ranks the sides by chance.
      default: 3,
      help: "saturation runs per side, back to back; the side's maximum is the median run's",
    }),
    maxWarmupRuns: flag.integer({
      min: 0,
      max: 9,
      // chat's deliveries/s still rose over its first runs after connecting (46k → 60k → 68k
      // in one invocation; socket.io mostly flat from its first): its steady state is what it serves.
      default: 2,
      help: "saturation runs per side before the measured ones, not counted (the same for every side)",
    }),
    loadPercent: flag.integer({
      min: 1,
      max: 100,
      default: 70,
      help: "latency run's rate, % of each side's max",
    }),
    durationMs: flag.integer({
      min: 200,
      max: 300_000,
      default: 8_000,
      help: "latency run's send time, warmup included",
    }),
    warmupMs: flag.integer({ min: 0, max: 60_000, default: 2_000, help: "leading send time not measured" }),
    drainMs: flag.integer({
      min: 100,
      max: 60_000,
      default: 5_000,
      help: "wait for late deliveries at most",
    }),
    resumeClients: flag.integer({
      min: 0,
      max: 20_000,
      default: 1_000,
      help: "clients of the first socket holder that reconnect after it is crashed and restarted (0: no restart)",
    }),
    sides: flag.choiceList(SIDES, {
      help: "chat and the peers to run beside it (default: all three when Centrifuge can be built,\nelse chat,socketio; see bench/centrifuge-build.ts)",
    }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `chat bench — chat beside socket.io + @socket.io/redis-streams-adapter, and Centrifuge

Usage
  npx casebook bench chat [options]

Every side in one run, on the same Redis: chat (send service + N gateways, every message
written to PostgreSQL before delivery), socket.io 4.8 with the Redis streams adapter
(N servers, connection-state recovery on, nothing durable) and, when Go and Debian's
centrifuge 0.15 sources are installed, Centrifuge (N servers of bench/centrifuge-server on
its Redis broker, a 2-minute history per channel for recovery; built offline for the run;
without them the bench says which apt-get line brings them and runs the other two).
--load-processes load generators, each in its own process, hold --clients clients per side
(a share each) in groups of --group-size, each client also in two 1:1 conversations;
--direct-percent of the messages go 1:1, the rest to a group (the defaults are the issue's
workload: 10,000 clients, 80% 1:1, 20% to groups of 500). Open-loop runs per side:
--max-runs saturation runs (--max-rate-per-s, above what either sustains), after
--max-warmup-runs not counted, give the side's deliveries/s, the median run's; then a
latency run at --load-percent of that side's own maximum gives send → deliver p50/p99,
from each message's intended send time. Last, the first socket holder is
crashed (SIGKILL) and started again on its port: --resume-clients of its clients reconnect,
each as its side's client does (chat: backoff with jitter, then a sync per conversation after
its last seq; socket.io: its manager's backoff, then connection-state recovery or a re-join;
Centrifuge: its client's backoff, then every channel re-subscribed, recovering from history),
and the time from the restart to each one's resumption is measured. Engines: DATABASE_URL and
REDIS_URL, else throw-away ones spawned for the run.

Rows: connections held, memory per connection (the clients connect in two halves: the socket
holders' resident memory grown over the second half, per connection of it — what one more
connection costs), memory growth while connecting (all of it, per connection: it also holds
what a process grows once under a connect storm), deliveries/s and msgs/s at saturation,
the rate offered at --load-percent, send → deliver p50/p99, deliveries missing after the
drain, send errors, clients resumed after the restart and the time to resume them (p50, all);
each metric once beside socket.io's and once beside Centrifuge's, each row with its ratio.

Options
${cli.flagHelp()}
`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = {
    ...cli.parse(argv),
    sidesExplicit: argv.some((arg) => arg === "--sides" || arg.startsWith("--sides=")),
  };
  if (args.warmupMs >= args.durationMs) {
    throw errors.create("BENCH_ARGS_INVALID", {
      detail: `--warmup-ms ${args.warmupMs} must be below --duration-ms ${args.durationMs}`,
      fields: { flag: "warmup-ms" },
    });
  }
  if (!args.sides.includes("chat") || args.sides.length < 2) {
    throw errors.create("BENCH_ARGS_INVALID", {
      detail: `--sides ${args.sides.join(",")}: every row is chat's beside a peer, so name chat and at least one of socketio, centrifuge`,
      fields: { flag: "sides" },
    });
  }
  if (args.groupSize > args.clients) {
    throw errors.create("BENCH_ARGS_INVALID", {
      detail: `--group-size ${args.groupSize} must be at most --clients ${args.clients}`,
      fields: { flag: "group-size" },
    });
  }
  return args;
}

interface SideResult {
  connected: number;
  /** Resident memory one more connection costs: the second half's growth over its connections. */
  bytesPerConnection: number;
  /** Resident memory's whole growth while connecting, over every connection. */
  bytesPerConnectionAllIn: number;
  /** The median of the saturation runs (offered far above what either side sustains), by deliveries/s. */
  max: RunResult;
  /** Every saturation run's deliveries/s, in the order they ran. */
  maxRunsDeliveredPerS: number[];
  /** Messages/s the side sustained: its deliveries/s over the mean fan-out. */
  maxMsgsPerS: number;
  /** The latency run, at --load-percent of maxMsgsPerS. */
  atLoad: RunResult;
  atLoadRatePerS: number;
  /** After the first socket holder's crash and restart; undefined with --resume-clients 0. */
  resume: ResumeSummary | undefined;
}

interface ResumeSummary {
  armed: number;
  resumed: number;
  recovered: number;
  /** From the restarted holder's ready time to each client's resumption. */
  p50Ms: number;
  allMs: number;
}

/** The resume phase's bound: a client not resumed by then counts as not resumed. */
const RESUME_BOUND_MS = 60_000;

export function summarizeResume(parts: readonly ResumeResult[]): ResumeSummary {
  const times = parts.flatMap((p) => p.resumeMs).sort((a, b) => a - b);
  const at = (q: number) =>
    times.length === 0 ? 0 : times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return {
    armed: parts.reduce((n, p) => n + p.armed, 0),
    resumed: times.length,
    recovered: parts.reduce((n, p) => n + p.recovered, 0),
    p50Ms: at(0.5),
    allMs: times.at(-1) ?? 0,
  };
}

/** The run of every load process as one generator's: sums, the latest window, merged latencies. */
export function mergeRuns(parts: readonly ChildRunResult[]): RunResult {
  const histogram = latencyHistogram();
  const errorCodes: Record<string, number> = {};
  for (const part of parts) {
    for (const bucket of part.latencyBuckets) histogram.record(bucket.lowValue, bucket.count);
    for (const [code, n] of Object.entries(part.errorCodes)) errorCodes[code] = (errorCodes[code] ?? 0) + n;
  }
  const sum = (pick: (part: ChildRunResult) => number) => parts.reduce((total, p) => total + pick(p), 0);
  const delivered = sum((p) => p.delivered);
  const windowMs = Math.max(0, ...parts.map((p) => p.windowMs));
  const s = histogram.summary();
  return {
    sent: sum((p) => p.sent),
    acked: sum((p) => p.acked),
    errors: sum((p) => p.errors),
    errorCodes,
    expected: sum((p) => p.expected),
    refusedExpected: sum((p) => p.refusedExpected),
    delivered,
    deliveredPerS: windowMs > 0 ? (delivered / windowMs) * 1_000 : 0,
    latencyMs: { p50: s.p50 / 1_000, p90: s.p90 / 1_000, p99: s.p99 / 1_000, max: s.max / 1_000 },
    stillConnected: sum((p) => p.stillConnected),
  };
}

/** The run with the median deliveries/s (the lower middle one for an even count). */
export function medianRun(runs: readonly RunResult[]): RunResult {
  return medianBy(runs, (run) => run.deliveredPerS);
}

async function measureSide(side: BenchSide, args: BenchArgs): Promise<SideResult> {
  const population = await side.prepare({
    users: args.clients,
    groupSize: args.groupSize,
    directs: args.directPercent > 0,
  });
  const loads = await Promise.all(
    Array.from({ length: args.loadProcesses }, () =>
      spawnChild(loadChildEntry, {
        ready: (line) => line.includes('"ready"'),
        lineTimeoutMs: CHILD_LINE_TIMEOUT_MS,
        echoStderr: true,
      }),
    ),
  );
  // Each load process gets the same command (or its own), and every answer is awaited.
  const askAll = async <T>(command: (k: number) => Record<string, unknown>): Promise<T[]> =>
    Promise.all(
      loads.map(async (load, k) => {
        load.send(JSON.stringify(command(k)));
        return JSON.parse(await load.nextLine()) as T;
      }),
    );
  // Contiguous shares: a group of --group-size mostly lives in one process.
  const shares = loads.map((_, k) =>
    population.clients
      .map((spec, index) => ({ index, ...spec }))
      .filter(({ index }) => Math.floor((index * loads.length) / population.clients.length) === k),
  );
  const halves = shares.map((share) => {
    const cut = Math.ceil(share.length / 2);
    return [share.slice(0, cut), share.slice(cut)] as const;
  });
  const runAll = async (ratePerS: number, timing: { durationMs: number; warmupMs: number }) => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const startAtEpochMs = Date.now() + START_LEAD_MS;
    const parts = await askAll<ChildRunResult>(() => ({
      cmd: "run",
      groups: population.groups,
      directs: population.directs,
      directShare: args.directPercent / 100,
      ratePerS,
      ...timing,
      drainMs: args.drainMs,
      seed,
      startAtEpochMs,
    }));
    return mergeRuns(parts);
  };
  /** The first socket holder crashed and restarted; its first --resume-clients clients reconnect. */
  const measureResume = async (): Promise<ResumeSummary> => {
    const onFirst = new Set(
      population.clients
        .map((_, index) => index)
        .filter((index) => index % side.urls.length === 0)
        .slice(0, args.resumeClients),
    );
    const armed = await askAll<{ armed: number }>((k) => ({
      cmd: "arm",
      clients: shares[k]!.map((c) => c.index).filter((index) => onFirst.has(index)),
      boundMs: RESUME_BOUND_MS,
    }));
    benchLog(
      `${side.name}: crashing ${side.urls[0]} (SIGKILL) and restarting it; ${armed.reduce((n, a) => n + a.armed, 0)} of its clients reconnect`,
    );
    await side.restart(0);
    const readyAt = Date.now();
    const summary = summarizeResume(
      await askAll<ResumeResult>(() => ({ cmd: "await-resume", fromEpochMs: readyAt })),
    );
    benchLog(
      `${side.name}: ${summary.resumed} of ${summary.armed} resumed, all within ${Math.round(summary.allMs)} ms of the restart` +
        (side.loadSide === "socketio" ? `; ${summary.recovered} by connection-state recovery` : "") +
        (side.loadSide === "centrifuge"
          ? `; ${summary.recovered} with every channel recovered from history`
          : ""),
    );
    return summary;
  };
  try {
    await sleep(SETTLE_MS);
    const before = await side.residentBytes();
    benchLog(
      `${side.name}: connecting ${args.clients} clients to ${side.urls.length} servers from ${loads.length} load processes`,
    );
    // In two halves, resident memory read after each: the second half's growth over its
    // connections is what one more connection costs. The first half's also holds what a
    // process grows once under a connect storm, whatever the count — V8's young generation
    // went from 32 to 128 MiB per socket holder here, ~10 KiB per connection at 10,000.
    const connectHalf = async (half: 0 | 1) => {
      const answers = await askAll<{ connected: number }>((k) => ({
        cmd: "connect",
        side: side.loadSide,
        urls: side.urls,
        clients: halves[k]![half],
        connectPerS: Math.max(1, Math.floor(CONNECT_PER_S / loads.length)),
      }));
      await sleep(SETTLE_MS);
      return answers.reduce((total, a) => total + a.connected, 0);
    };
    const firstHalf = await connectHalf(0);
    const middle = await side.residentBytes();
    const secondHalf = await connectHalf(1);
    const after = await side.residentBytes();
    const connected = firstHalf + secondHalf;
    benchLog(
      `${side.name}: ${connected} connected; saturating at ${args.maxRatePerS} msgs/s for ${args.maxDurationMs} ms`,
    );
    const maxRuns: RunResult[] = [];
    for (let run = 1 - args.maxWarmupRuns; run <= args.maxRuns; run++) {
      const one = await runAll(args.maxRatePerS, {
        durationMs: args.maxDurationMs,
        warmupMs: Math.floor(args.maxDurationMs / 4),
      });
      if (run > 0) maxRuns.push(one);
      benchLog(
        `${side.name}: saturation run ${run > 0 ? `${run} of ${args.maxRuns}` : "(warm-up, not counted)"}: ${Math.round(one.deliveredPerS)} deliveries/s` +
          (one.errors > 0 ? `; send errors ${JSON.stringify(one.errorCodes)}` : ""),
      );
    }
    const max = medianRun(maxRuns);
    const fanout = max.sent > 0 ? max.expected / max.sent : 1;
    const maxMsgsPerS = max.deliveredPerS / fanout;
    const atLoadRatePerS = Math.max(1, Math.round((maxMsgsPerS * args.loadPercent) / 100));
    benchLog(
      `${side.name}: ${Math.round(max.deliveredPerS)} deliveries/s at most (${Math.round(maxMsgsPerS)} msgs/s); ` +
        `latency at ${args.loadPercent}%: ${atLoadRatePerS} msgs/s for ${args.durationMs} ms`,
    );
    const atLoad = await runAll(atLoadRatePerS, { durationMs: args.durationMs, warmupMs: args.warmupMs });
    const resume = args.resumeClients > 0 ? await measureResume() : undefined;
    return {
      connected,
      bytesPerConnection: secondHalf > 0 ? (after - middle) / secondHalf : 0,
      bytesPerConnectionAllIn: connected > 0 ? (after - before) / connected : 0,
      max,
      maxRunsDeliveredPerS: maxRuns.map((r) => r.deliveredPerS),
      maxMsgsPerS,
      atLoad,
      atLoadRatePerS,
      resume,
    };
  } finally {
    await Promise.all(loads.map((load) => load.stop({ line: JSON.stringify({ cmd: "close" }) })));
  }
}

async function runSide(open: () => Promise<BenchSide>, args: BenchArgs): Promise<SideResult> {
  const side = await open();
  try {
    return await measureSide(side, args);
  } finally {
    await side.close();
  }
}

/** A peer's measurements and the name its rows carry. */
export interface PeerResult {
  name: string;
  result: SideResult;
}

/**
 * chat's rows beside every peer that ran: for each metric, one row per peer in `peers`' order
 * (socket.io's, then Centrifuge's), so each row carries one ratio and a metric's rows stay together.
 */
export function resultRows(args: BenchArgs, ours: SideResult, peers: readonly PeerResult[]): BenchResult[] {
  const perPeer = peers.map((peer) => rowsBeside(args, ours, peer.result, peer.name));
  const count = Math.max(0, ...perPeer.map((rows) => rows.length));
  return Array.from({ length: count }, (_, i) => perPeer.flatMap((rows) => rows[i] ?? [])).flat();
}

function rowsBeside(args: BenchArgs, ours: SideResult, peer: SideResult, peerName: string): BenchResult[] {
  const where =
    args.directPercent > 0
      ? `${args.clients} clients on ${args.gateways} gateways, ${args.directPercent}% 1:1, ${100 - args.directPercent}% to groups of ${args.groupSize}`
      : `${args.clients} clients on ${args.gateways} gateways, groups of ${args.groupSize}`;
  const held = scenarioRows({ system: SYSTEM, scenario: where, peer: peerName, tidy: true });
  const max = scenarioRows({
    system: SYSTEM,
    scenario: `${where}, ${args.maxRatePerS} msgs/s offered (saturated)`,
    peer: peerName,
    tidy: true,
  });
  const atLoad = scenarioRows({
    system: SYSTEM,
    scenario: `${where}, open loop at ${args.loadPercent}% of each side's max`,
    peer: peerName,
    tidy: true,
  });
  // What an accepted message still owed after the drain; a refused send's recipients are owed nothing.
  const missing = (r: RunResult) => r.expected - r.refusedExpected - r.delivered;
  return [
    held.value("connections held", "connections", ours.connected, {
      peer: peer.connected,
      direction: "higher-is-better",
    }),
    held.value("memory per connection", "KiB", ours.bytesPerConnection / 1_024, {
      peer: peer.bytesPerConnection / 1_024,
    }),
    held.value(
      "memory growth while connecting, per connection",
      "KiB",
      ours.bytesPerConnectionAllIn / 1_024,
      {
        peer: peer.bytesPerConnectionAllIn / 1_024,
      },
    ),
    max.value("deliveries", "deliveries/s", ours.max.deliveredPerS, { peer: peer.max.deliveredPerS }),
    max.value("messages sent", "msgs/s", ours.maxMsgsPerS, { peer: peer.maxMsgsPerS }),
    atLoad.value("rate offered", "msgs/s", ours.atLoadRatePerS, { peer: peer.atLoadRatePerS }),
    ...atLoad.percentiles("send → deliver", ["p50", "p99"], ours.atLoad.latencyMs, {
      peer: peer.atLoad.latencyMs,
    }),
    atLoad.count("deliveries missing after the drain", missing(ours.atLoad), { peer: missing(peer.atLoad) }),
    atLoad.count("send errors, both runs", ours.atLoad.errors + ours.max.errors, {
      peer: peer.atLoad.errors + peer.max.errors,
    }),
    ...resumeRows(ours.resume, peer.resume, peerName),
  ];
}

function resumeRows(
  ours: ResumeSummary | undefined,
  peer: ResumeSummary | undefined,
  peerName: string,
): BenchResult[] {
  if (ours === undefined || peer === undefined) return [];
  const rows = scenarioRows({
    system: SYSTEM,
    scenario: `${ours.armed} clients of a socket holder crashed and restarted`,
    peer: peerName,
    tidy: true,
  });
  return [
    rows.value("clients resumed within 60 s", "clients", ours.resumed, {
      peer: peer.resumed,
      direction: "higher-is-better",
    }),
    rows.value("time to resume, p50 (from the restart)", "ms", ours.p50Ms, { peer: peer.p50Ms }),
    rows.value("time to resume them all (from the restart)", "ms", ours.allMs, { peer: peer.allMs }),
  ];
}

/** A saturation run whose side sent this share of the offered rate or more was not saturated. */
const OFFERED_CAP_SHARE = 0.8;

/** True when the offered rate, not the side, bounded its saturation run: its maximum is unknown. */
export function offeredRateCapped(side: Pick<SideResult, "maxMsgsPerS">, offeredPerS: number): boolean {
  return side.maxMsgsPerS >= OFFERED_CAP_SHARE * offeredPerS;
}

/**
 * The Centrifuge binary when the run includes that side; undefined, with one progress line
 * saying why, when it was asked for by default but cannot be built here (no Go, a missing
 * Debian package). Named in --sides, it must run: the bench fails naming what to install.
 */
async function centrifugeForRun(
  args: BenchArgs,
): Promise<Extract<CentrifugeBuild, { ok: true }> | undefined> {
  if (!args.sides.includes("centrifuge")) return undefined;
  const build = await buildCentrifugeServer({ log: benchLog });
  if (build.ok) return build;
  if (args.sidesExplicit)
    throw new Error(`--sides names centrifuge, but it cannot run here: ${build.reason}`);
  benchLog(`chat bench: sides chat,socketio — Centrifuge left out: ${build.reason}`);
  return undefined;
}

async function run(engines: BenchEngines, args: BenchArgs, json: boolean): Promise<void> {
  const centrifuge = await centrifugeForRun(args);
  try {
    const socketIo = args.sides.includes("socketio")
      ? await runSide(() => startSocketIoSide(engines, { servers: args.gateways }), args)
      : undefined;
    const anchor =
      centrifuge === undefined
        ? undefined
        : await runSide(
            () => startCentrifugeSide(engines, { servers: args.gateways, program: centrifuge.program }),
            args,
          );
    const ours = await runSide(() => startChatSide(engines, { gateways: args.gateways }), args);
    const peers = [
      ...(socketIo === undefined ? [] : [{ name: PEER, result: socketIo }]),
      ...(anchor === undefined ? [] : [{ name: CENTRIFUGE_PEER, result: anchor }]),
    ];
    process.stdout.write(`${renderBench(resultRows(args, ours, peers), json ? "json" : "markdown")}\n`);
    if (!json) process.stdout.write(summaryLines(engines, args, ours, socketIo, anchor));
  } finally {
    await centrifuge?.remove();
  }
}

/** The goal lines against socket.io (when it ran), the Centrifuge anchor's ratios, the engines. */
function summaryLines(
  engines: BenchEngines,
  args: BenchArgs,
  ours: SideResult,
  peer: SideResult | undefined,
  anchor: SideResult | undefined,
): string {
  const times = (a: number, b: number) => (b > 0 ? a / b : 0);
  const lines = [""];
  if (peer !== undefined) {
    const ratio = times(ours.max.deliveredPerS, peer.max.deliveredPerS);
    const memory = times(ours.bytesPerConnection, peer.bytesPerConnection);
    const throughputGoal = "goal deliveries/s ≥ 1.0× socket.io's, writing durably first";
    lines.push(
      offeredRateCapped(peer, args.maxRatePerS)
        ? `- ${throughputGoal}: not judged — socket.io sent ${Math.round(peer.maxMsgsPerS)} of the ${args.maxRatePerS} msgs/s offered, so the offered rate, not socket.io, was its cap; rerun with a higher --max-rate-per-s`
        : goalLine(
            throughputGoal,
            `${ratio.toFixed(2)}× (medians of ${args.maxRuns} saturation runs each after ${args.maxWarmupRuns} not counted — chat ${ours.maxRunsDeliveredPerS.map(formatNumber).join(", ")}, socket.io ${peer.maxRunsDeliveredPerS.map(formatNumber).join(", ")})`,
            ratio >= 1,
          ),
      goalLine("goal memory per connection ≤ socket.io's", `${memory.toFixed(2)}×`, memory <= 1),
    );
  }
  if (anchor !== undefined) {
    const capped = offeredRateCapped(anchor, args.maxRatePerS)
      ? ` (Centrifuge sent ${Math.round(anchor.maxMsgsPerS)} of the ${args.maxRatePerS} msgs/s offered: its maximum is higher than measured)`
      : "";
    lines.push(
      `- upper anchor, no goal: chat's deliveries/s ${times(ours.max.deliveredPerS, anchor.max.deliveredPerS).toFixed(2)}× Centrifuge's, memory per connection ${times(ours.bytesPerConnection, anchor.bytesPerConnection).toFixed(2)}×${capped}`,
    );
  }
  const durable = [
    ...(peer === undefined ? [] : ["socket.io writes nothing durable"]),
    "chat writes every message to PostgreSQL first",
    ...(anchor === undefined
      ? []
      : ["Centrifuge keeps a 2-minute history per channel in Redis for recovery, nothing durable"]),
  ];
  lines.push(`- engines: ${engines.label}; ${durable.join(", ")}`, "");
  return lines.join("\n");
}

export const benchProgram: BenchProgram<BenchArgs, BenchEngines> = {
  name: SYSTEM,
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: () => openBenchEngines({ env: process.env, log: benchLog }),
  run,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);

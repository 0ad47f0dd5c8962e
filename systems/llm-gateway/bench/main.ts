/**
 * `casebook bench llm-gateway` (issue 21's Bench): the same provider simulator for every row,
 * all in one invocation on the same cores, each server its own process and the load
 * generator another (bench/stream-load-child.ts). At each concurrency (50 and 500 streams
 * held open in a closed loop) it times TTFT and total for the simulator called directly,
 * then through Portkey (`@portkey-ai/gateway`, plain proxying), our gateway with budgets and
 * cache off (plain proxying), and our gateway with every feature on (token budgets,
 * breakers, a semantic-cache lookup per request) — every target once per round, `--rounds`
 * rounds (the order of the gateways rotated each round, the direct call first); rows give
 * the median over rounds of the latency each ADDS to its round's direct call (p50 and p99)
 * and the memory each holds per open stream; the goal line checks plain proxying ≤ 0.5×
 * Portkey's overhead. Markdown on stdout (JSON lines with --json), progress on stderr.
 *
 * @example
 * // node systems/llm-gateway/bench/main.ts --concurrency 50 --duration-ms 6000 --json
 */
import { loadavg } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { renderBench } from "@casebook/lab/bench-report";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { errors } from "../src/errors.ts";
import { type BenchTarget, openTargets, type TargetName, type Targets } from "./bench-targets.ts";
import { goalLines, type LevelRuns, latencyRows, type RoundRuns, type TargetRun } from "./latency-rows.ts";
import type { RunCommand, RunResult } from "./stream-load-child.ts";

const SYSTEM = "llm-gateway";
const loadChildEntry = new URL("./stream-load-child.ts", import.meta.url);
const TARGETS = ["floor", "edge", "portkey", "plain", "full"] as const;
/** Idle time before a run, so the previous run's sockets and garbage settle before RSS is read. */
const SETTLE_MS = 1_000;

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly concurrency: readonly number[];
  readonly targets: readonly (typeof TARGETS)[number][];
  readonly rounds: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly ttftMs: number;
  readonly tokensPerS: number;
  readonly answerTokens: number;
  readonly promptWords: number;
  readonly databaseUrl: string;
  readonly together: boolean;
}

const cli = defineBenchArgs({
  flags: {
    concurrency: flag.integerList({
      min: 1,
      max: 2_000,
      default: [50, 500],
      help: "streams held open at once",
    }),
    targets: flag.choiceList(TARGETS, { help: "what runs beside the direct call (default all)" }),
    rounds: flag.integer({
      min: 1,
      max: 20,
      default: 3,
      help: "runs of every target per concurrency; rows give medians over them",
    }),
    durationMs: flag.integer({
      min: 1_000,
      max: 600_000,
      default: 20_000,
      help: "each run, warmup included",
    }),
    warmupMs: flag.integer({
      min: 0,
      max: 60_000,
      default: 4_000,
      help: "leading time of each run not measured",
    }),
    ttftMs: flag.integer({ min: 0, max: 60_000, default: 100, help: "the simulator's time to first token" }),
    tokensPerS: flag.integer({
      min: 1,
      max: 10_000,
      default: 20,
      help: "the simulator's pace after the first token",
    }),
    answerTokens: flag.integer({ min: 1, max: 10_000, default: 100, help: "tokens in every answer" }),
    promptWords: flag.integer({
      min: 1,
      max: 20_000,
      default: 200,
      help: "made-up words per prompt (≈2.5 tokens each)",
    }),
    together: flag.boolean({
      help: "start every stream of a run at once (a burst that then repeats every stream's length); default: starts spread across one stream's length",
    }),
    databaseUrl: flag.string({
      default: process.env.DATABASE_URL ?? "",
      value: "<url>",
      help: "PostgreSQL for the gateways' tables (default $DATABASE_URL; empty = embedded PGlite)",
    }),
    json: flag.json(),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `llm-gateway bench — added latency and memory per stream, beside Portkey

Usage
  npx casebook bench llm-gateway [options]

One provider simulator (its own process) answers every row. At each concurrency the load
generator (its own process) holds that many chat streams open in a closed loop (their starts
spread across one stream's length, as independent clients' would be; --together starts them
at once), against:
the simulator directly (baseline), a bare Node relay (the floor: node:http in, undici out,
the JSON read and written again, nothing else — what one more Node process on the path
costs), the same relay behind the shared edge (edge: request id, access log, key, body
validation — what the edge adds), @portkey-ai/gateway proxying to it, our gateway with
budgets and cache off (plain proxying), and our gateway with token budgets, breakers and a
semantic-cache lookup per request (full features) — each once per round, --rounds rounds.
Rows: the median over rounds of the TTFT and total latency each gateway adds to its round's
direct call (p50, p99), and RSS per open stream. Each round ends with the direct call run
again (A/A): how much it differs from itself is the run's noise, printed as rows, and a goal
line whose Portkey overhead is within it is not judged.

Options
${cli.flagHelp()}
`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = cli.parse(argv);
  if (args.warmupMs >= args.durationMs) {
    throw errors.create("BENCH_ARGS_INVALID", {
      detail: `--warmup-ms ${args.warmupMs} must be below --duration-ms ${args.durationMs}`,
      fields: { flag: "warmup-ms" },
    });
  }
  return args;
}

/** How long the simulator takes over one answer: its TTFT, then the other tokens at its pace. */
function streamLengthMs(args: BenchArgs): number {
  return args.ttftMs + ((args.answerTokens - 1) * 1_000) / args.tokensPerS;
}

interface Bench {
  readonly targets: Targets;
  readonly load: SpawnedChild;
  close(): Promise<void>;
}

/** A time of the progress lines, to the microsecond. */
const ms = (value: number) => `${value.toFixed(3)} ms`;

async function openBench(args: BenchArgs): Promise<Bench> {
  const targets = await openTargets({
    sim: { ttftMs: args.ttftMs, tokensPerS: args.tokensPerS, answerTokens: args.answerTokens },
    databaseUrl: args.databaseUrl === "" ? undefined : args.databaseUrl,
    floors: args.targets.filter((name) => name === "floor" || name === "edge"),
    portkey: args.targets.includes("portkey"),
    gateways: args.targets.filter((name) => name === "plain" || name === "full"),
  });
  let load: SpawnedChild;
  try {
    load = await spawnChild(loadChildEntry, {
      ready: (line) => line.includes('"ready"'),
      lineTimeoutMs: 10 * 60_000,
    });
  } catch (error) {
    await targets.close();
    throw error;
  }
  return {
    targets,
    load,
    close: async () => {
      await Promise.allSettled([load.stop({ line: JSON.stringify({ cmd: "close" }) }), targets.close()]);
    },
  };
}

async function measure(
  bench: Bench,
  target: BenchTarget,
  concurrency: number,
  round: number,
  args: BenchArgs,
  label: string = target.name,
): Promise<TargetRun> {
  await sleep(SETTLE_MS);
  const idle = await target.residentBytes();

  const command: RunCommand = {
    cmd: "run",
    url: target.url,
    headers: target.headers,
    model: "gpt-4o-mini",
    concurrency,
    spreadStartMs: args.together ? 0 : streamLengthMs(args),
    durationMs: args.durationMs,
    warmupMs: args.warmupMs,
    promptWords: args.promptWords,
    // Fresh prompts per run: a full-features run must not hit the answers of an earlier run.
    promptSeed: `${concurrency}-${round}-${label}`,
    maxTokens: args.answerTokens,
    temperature: 0,
  };
  bench.load.send(JSON.stringify(command));
  const answer = bench.load.nextLine();
  await sleep(args.warmupMs);
  const cpuAfterWarmup = await target.cpuMs();
  // Mid-measurement every stream is open (closed loop): the RSS then, less the idle RSS.
  await sleep((args.durationMs - args.warmupMs) / 2);
  const busy = await target.residentBytes();
  const result = JSON.parse(await answer) as RunResult;
  // The CPU the target's process used after the warmup, over the streams that ended whole then.
  const cpuMs = (await target.cpuMs()) - cpuAfterWarmup;
  benchLog(
    `${SYSTEM} bench: ${label} × ${concurrency}: ${result.ok} ok, ${result.errors} errors, ${result.unfinished} unfinished` +
      `${result.firstError ? ` (first: ${result.firstError})` : ""}, ${result.cacheHits} cache hits; ` +
      `TTFT p50 ${ms(result.ttftMs.p50)} p99 ${ms(result.ttftMs.p99)}, total p50 ${ms(result.totalMs.p50)} p99 ${ms(result.totalMs.p99)}; ` +
      `CPU ${(result.finished > 0 ? cpuMs / result.finished : 0).toFixed(1)} ms per stream; load ${loadavg()[0]?.toFixed(1)}`,
  );
  return {
    result,
    bytesPerStream: (busy - idle) / concurrency,
    cpuMsPerStream: result.finished > 0 ? cpuMs / result.finished : 0,
  };
}

/** Round `round`'s order: the direct call first (its round's baseline), the others rotated by one each round. */
export function roundOrder<T extends { name: TargetName }>(list: readonly T[], round: number): T[] {
  const direct = list.filter((target) => target.name === "direct");
  const others = list.filter((target) => target.name !== "direct");
  const shift = others.length === 0 ? 0 : round % others.length;
  return [...direct, ...others.slice(shift), ...others.slice(0, shift)];
}

async function run(bench: Bench, args: BenchArgs, json: boolean): Promise<void> {
  const levels: LevelRuns[] = [];
  for (const concurrency of args.concurrency) {
    const rounds: RoundRuns[] = [];
    const aa: (TargetRun | undefined)[] = [];
    for (let round = 0; round < args.rounds; round++) {
      benchLog(`${SYSTEM} bench: ${concurrency} streams, round ${round + 1} of ${args.rounds}`);
      const runs: Partial<Record<TargetName, TargetRun>> = {};
      for (const target of roundOrder(bench.targets.list, round))
        runs[target.name] = await measure(bench, target, concurrency, round, args);
      rounds.push(runs);
      // A/A: the direct call once more, last in the round — how far it differs from itself.
      const direct = bench.targets.list.find((target) => target.name === "direct");
      aa.push(direct && (await measure(bench, direct, concurrency, round, args, "direct (again, A/A)")));
    }
    levels.push({ concurrency, rounds, aa });
  }
  const rows = latencyRows(levels);
  if (json) {
    process.stdout.write(`${renderBench(rows, "json")}\n`);
    return;
  }
  const [one, five, fifteen] = loadavg().map((x) => x.toFixed(2));
  const sizes =
    `prompts of ${args.promptWords} made-up words (≈${Math.round(args.promptWords * 2.5)} tokens), answers of ` +
    `${args.answerTokens} tokens at ${args.tokensPerS} tokens/s after a ${args.ttftMs} ms TTFT; ` +
    `${args.durationMs} ms per run (${args.warmupMs} ms warmup), ${args.rounds} rounds (medians); gateways on ${args.databaseUrl === "" ? "PGlite" : "PostgreSQL"}`;
  const errorsSeen = levels.flatMap((l) =>
    l.rounds.flatMap((runs, round) =>
      Object.entries(runs)
        .filter(([, r]) => r.result.errors > 0 || r.result.cacheHits > 0)
        .map(
          ([name, r]) =>
            `${name} × ${l.concurrency}, round ${round + 1}: ${r.result.errors} errors, ${r.result.cacheHits} cache hits`,
        ),
    ),
  );
  process.stdout.write(
    [
      `load average ${one} ${five} ${fifteen} (2 cores, shared: indicative figures)`,
      sizes,
      "",
      renderBench(rows, "markdown"),
      "",
      ...goalLines(levels),
      ...(errorsSeen.length > 0 ? ["", ...errorsSeen] : []),
      "",
    ].join("\n"),
  );
}

/**
 * What the bench holds open: its processes depend on the flags, so `run` opens them into this
 * holder and `close` (always called, on Ctrl-C too) stops whatever was opened.
 */
interface BenchHolder {
  bench: Bench | undefined;
  close(): Promise<void>;
}

export const benchProgram: BenchProgram<BenchArgs, BenchHolder> = {
  name: SYSTEM,
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: async () => {
    const holder: BenchHolder = { bench: undefined, close: async () => holder.bench?.close() };
    return holder;
  },
  run: async (holder, args, json) => {
    holder.bench = await openBench(args);
    await run(holder.bench, args, json);
  },
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);

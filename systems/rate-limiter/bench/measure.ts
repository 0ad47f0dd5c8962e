/**
 * Runs one contender under lab's load generator and collects, beside latency and
 * throughput, what explains them: the share of decisions that allowed (a refusal
 * writes nothing in our script, so the mix matters), Node CPU per decision (the
 * client's cost: this process's user + system time over the run, load generator
 * included, the same for every contender) and, on a private Redis, Redis execution
 * time per decision from INFO commandstats (the server's cost, I/O excluded).
 *
 * @example
 * const run = await measureClosed(contender, { concurrency: 50, durationMs: 5_000, warmupMs: 1_000,
 *   users: 10_000, log, redis: target });
 * run.report.achievedRatePerS; run.serverUsPerDecision;
 */
import { type LoadProgress, type LoadReport, runClosedLoop, runOpenLoop } from "@casebook/lab/load-generator";
import type { Redis } from "ioredis";
import { type Contender, UserPicker } from "./contenders.ts";
import type { RedisTarget } from "./redis-target.ts";

export interface Measured {
  readonly contender: string;
  readonly report: LoadReport;
  /** % of answered decisions that allowed, warmup included. */
  readonly allowedPct: number;
  /** Node CPU (user + system) per decision, µs, warmup included. */
  readonly clientCpuUsPerDecision: number;
  /** Redis command execution time per decision, µs; undefined unless the Redis is private. */
  readonly serverUsPerDecision: number | undefined;
}

export interface MeasureOptions {
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly users: number;
  readonly log: (line: string) => void;
  /** Where to read INFO commandstats; pass a private target only (a shared one mixes in others' commands). */
  readonly redis?: RedisTarget;
}

/** A decision is never allowed to hang a run: one that takes this long counts as an error (a timeout). */
const requestTimeoutMs = 5_000;
/** Open loop: bound on decisions in flight; one due beyond it is dropped and counted. */
const maxInFlight = 2_000;

/** Total calls and µs of every command but the admin's INFO, from INFO commandstats. */
async function commandStats(admin: Redis): Promise<{ calls: number; usec: number }> {
  const info = await admin.info("commandstats");
  let calls = 0;
  let usec = 0;
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (match[1] === "info") continue;
    calls += Number(match[2]);
    usec += Number(match[3]);
  }
  return { calls, usec };
}

function progressLine(name: string, log: (line: string) => void) {
  return (p: LoadProgress) =>
    log(
      `  ${name}: ${p.phase} ${(p.elapsedMs / 1_000).toFixed(1)} s, ${p.completed} done, ${p.errors} errors`,
    );
}

async function measure(
  contender: Contender,
  options: MeasureOptions,
  run: (task: () => Promise<unknown>) => Promise<LoadReport>,
): Promise<Measured> {
  const users = new UserPicker(options.users);
  let allowed = 0;
  let limited = 0;
  const task = async () => {
    if (await contender.decide(users.next())) allowed++;
    else limited++;
  };
  const admin = options.redis?.isPrivate ? options.redis.admin : undefined;
  const statsBefore = admin ? await commandStats(admin) : undefined;
  const cpuBefore = process.cpuUsage();
  const report = await run(task);
  const cpu = process.cpuUsage(cpuBefore);
  const statsAfter = admin ? await commandStats(admin) : undefined;
  const decisions = Math.max(1, allowed + limited);
  return {
    contender: contender.name,
    report,
    allowedPct: (100 * allowed) / decisions,
    clientCpuUsPerDecision: (cpu.user + cpu.system) / decisions,
    serverUsPerDecision:
      statsBefore && statsAfter ? (statsAfter.usec - statsBefore.usec) / decisions : undefined,
  };
}

/**
 * Closed loop: `concurrency` callers, each sending its next decision when the last answered.
 *
 * @example
 * await measureClosed(peer, { concurrency: 50, durationMs: 5_000, warmupMs: 1_000, users: 10_000, log });
 */
export function measureClosed(
  contender: Contender,
  options: MeasureOptions & { concurrency: number },
): Promise<Measured> {
  options.log(`closed loop, ${options.concurrency} callers: ${contender.name}`);
  return measure(contender, options, (task) =>
    runClosedLoop({
      concurrency: options.concurrency,
      durationMs: options.warmupMs + options.durationMs,
      warmupMs: options.warmupMs,
      requestTimeoutMs,
      task,
      onProgress: progressLine(contender.name, options.log),
    }),
  );
}

/**
 * Open loop at a fixed arrival rate; latency from each decision's intended send time.
 *
 * @example
 * await measureOpen(ours, { ratePerS: 20_000, durationMs: 5_000, warmupMs: 1_000, users: 10_000, log });
 */
export function measureOpen(
  contender: Contender,
  options: MeasureOptions & { ratePerS: number },
): Promise<Measured> {
  options.log(`open loop, ${options.ratePerS} decisions/s: ${contender.name}`);
  return measure(contender, options, (task) =>
    runOpenLoop({
      ratePerS: options.ratePerS,
      durationMs: options.warmupMs + options.durationMs,
      warmupMs: options.warmupMs,
      maxInFlight,
      requestTimeoutMs,
      task,
      onProgress: progressLine(contender.name, options.log),
    }),
  );
}

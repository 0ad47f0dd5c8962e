/**
 * Runs a set of systems as children until the user stops them: start all, wait
 * (bounded) for each one's `/healthz`, print what listens where, pass their log
 * lines through with the system's name, and on SIGINT/SIGTERM stop every child
 * (SIGTERM, bounded wait, SIGKILL) and return 0. A child that dies or never gets
 * healthy during start fails the whole start: its last stderr lines are printed,
 * the others are stopped, and CLI_START_FAILED is thrown.
 *
 * @example
 * const code = await supervise(selection.plans, { ...defaultSuperviseLimits, mode: "up",
 *   logStyle: { pretty: true, color: true }, out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) });
 */
import { mkdirSync } from "node:fs";
import { constants } from "node:os";
import { setTimeout as sleep } from "node:timers/promises";
import { cliErrors } from "./cli-errors.ts";
import { waitForHealthy } from "./health-wait.ts";
import type { SystemPlan } from "./launch-plan.ts";
import { formatLogLine, type LogStyle } from "./log-format.ts";
import { StartNotes } from "./start-notes.ts";
import { type ExitInfo, SystemProcess } from "./system-process.ts";
import { renderTable } from "./table.ts";

export interface SuperviseLimits {
  /** Bound on waiting for one system's first healthy `/healthz`. */
  healthTimeoutMs: number;
  healthIntervalMs: number;
  /** Bound on one `/healthz` request. */
  requestTimeoutMs: number;
  /** Grace between SIGTERM and SIGKILL when stopping a child. */
  stopTimeoutMs: number;
  /** stderr lines kept per child for the report when it dies. */
  stderrTailLines: number;
  maxLineChars: number;
}

export const defaultSuperviseLimits: SuperviseLimits = {
  healthTimeoutMs: 60_000,
  healthIntervalMs: 100,
  requestTimeoutMs: 1_000,
  stopTimeoutMs: 10_000,
  stderrTailLines: 30,
  maxLineChars: 16_384,
};

export interface SuperviseOptions extends SuperviseLimits {
  /** `run`: the CLI ends with the child's own exit code when it ends on its own. */
  mode: "up" | "run";
  logStyle: Omit<LogStyle, "nameWidth">;
  out(text: string): void;
  err(text: string): void;
}

type StartResult = { kind: "healthy" | "aborted" } | { kind: "exited"; info: ExitInfo } | { kind: "timeout" };

const shutdownSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
/** After the last /healthz: time for start log lines (keys, RESP port) still in the pipes to arrive. */
const NOTES_SETTLE_MS = 300;

export async function supervise(plans: readonly SystemPlan[], options: SuperviseOptions): Promise<number> {
  const children: SystemProcess[] = [];
  let signalled: NodeJS.Signals | undefined;
  let wake: () => void = () => {};
  const shutdown = new Promise<void>((resolve) => {
    wake = resolve;
  });
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled !== undefined) {
      options.err(`casebook: ${signal} again, killing every system now\n`);
      for (const child of children) child.killNow();
      return;
    }
    signalled = signal;
    wake();
  };
  // Last resort: should the CLI die on an unexpected error, no child is left behind.
  const onExit = () => {
    for (const child of children) child.killNow();
  };
  for (const signal of shutdownSignals) process.on(signal, onSignal);
  process.on("exit", onExit);
  const notes = new StartNotes();
  try {
    children.push(...startChildren(plans, options, notes));
    const failed = await awaitStart(children, plans, options, shutdown);
    if (signalled === undefined && failed.length > 0) {
      await stopAll(children, options);
      throw cliErrors.create("CLI_START_FAILED", {
        detail: `${failed.join(", ")} did not come up; the other systems were stopped.`,
      });
    }
    if (signalled === undefined) {
      // A line logged just before /healthz answered may still be in the pipe: a short, bounded settle.
      await sleep(NOTES_SETTLE_MS);
      printReady(plans, options, notes);
      const code = await runUntilDone(children, options, shutdown);
      if (signalled === undefined) return code;
    }
    options.err(`casebook: ${signalled}, stopping ${children.filter((c) => c.running).length} system(s)…\n`);
    await stopAll(children, options);
    options.err("casebook: stopped\n");
    return 0;
  } finally {
    for (const signal of shutdownSignals) process.off(signal, onSignal);
    process.off("exit", onExit);
  }
}

function startChildren(
  plans: readonly SystemPlan[],
  options: SuperviseOptions,
  notes: StartNotes,
): SystemProcess[] {
  const nameWidth = Math.max(...plans.map((p) => p.name.length));
  const style: LogStyle = { ...options.logStyle, nameWidth };
  return plans.map((plan, index) => {
    mkdirSync(plan.dataDir, { recursive: true });
    options.err(`casebook: starting ${plan.name} on ${plan.url} (${plan.engine})\n`);
    return SystemProcess.start({
      name: plan.name,
      entry: plan.entry,
      args: plan.args,
      cwd: plan.dir,
      env: plan.env,
      stderrTailLines: options.stderrTailLines,
      maxLineChars: options.maxLineChars,
      onLine: (stream, line) => {
        notes.observe(plan.name, line);
        const text = `${formatLogLine(plan.name, line, style, index)}\n`;
        if (stream === "stdout") options.out(text);
        else options.err(text);
      },
    });
  });
}

/** Waits for every child's health; returns the names that failed (after printing why). */
async function awaitStart(
  children: readonly SystemProcess[],
  plans: readonly SystemPlan[],
  options: SuperviseOptions,
  shutdown: Promise<void>,
): Promise<string[]> {
  const failFast = new AbortController();
  void shutdown.then(() => failFast.abort());
  const results = await Promise.all(
    children.map(async (child, i) => {
      const result = await awaitOne(child, plans[i]!, options, failFast.signal);
      // One failure ends the start: no point waiting out the others' timeouts.
      if (result.kind === "exited" || result.kind === "timeout") failFast.abort();
      return result;
    }),
  );
  const failed: string[] = [];
  results.forEach((result, i) => {
    if (result.kind !== "exited" && result.kind !== "timeout") return;
    const plan = plans[i]!;
    failed.push(plan.name);
    const why =
      result.kind === "exited"
        ? `exited during start (${describeExit(result.info)})`
        : `did not answer GET ${plan.url}/healthz with 200 within ${options.healthTimeoutMs} ms ` +
          "(raise it with --health-timeout-ms)";
    options.err(`casebook: ✗ ${plan.name} ${why}\n${formatTail(children[i]!)}`);
  });
  return failed;
}

async function awaitOne(
  child: SystemProcess,
  plan: SystemPlan,
  options: SuperviseOptions,
  failFast: AbortSignal,
): Promise<StartResult> {
  const controller = new AbortController();
  const abort = () => controller.abort();
  failFast.addEventListener("abort", abort, { once: true });
  void child.exited.then(abort);
  try {
    const outcome = await waitForHealthy(plan.url, {
      timeoutMs: options.healthTimeoutMs,
      intervalMs: options.healthIntervalMs,
      requestTimeoutMs: options.requestTimeoutMs,
      signal: controller.signal,
    });
    if (outcome === "healthy") return { kind: "healthy" };
    if (!child.running) return { kind: "exited", info: await child.exited };
    return { kind: outcome };
  } finally {
    failFast.removeEventListener("abort", abort);
  }
}

/** Waits until a signal (returns 0, the caller stops the children) or every child has exited. */
async function runUntilDone(
  children: readonly SystemProcess[],
  options: SuperviseOptions,
  shutdown: Promise<void>,
): Promise<number> {
  const live = new Set(children);
  let worst = 0;
  while (live.size > 0) {
    const next = await Promise.race([
      shutdown.then(() => undefined),
      ...[...live].map((child) => child.exited.then((info) => ({ child, info }))),
    ]);
    if (next === undefined) return 0;
    live.delete(next.child);
    const code = exitCodeFor(next.info);
    if (options.mode === "run") {
      options.err(`casebook: ${next.child.name} exited (${describeExit(next.info)})\n`);
      return code;
    }
    worst = Math.max(worst, code === 0 ? 0 : 1);
    const tail = code === 0 ? "" : formatTail(next.child);
    options.err(
      `casebook: ${next.child.name} exited (${describeExit(next.info)}); ${live.size} still running\n${tail}`,
    );
  }
  return worst;
}

async function stopAll(children: readonly SystemProcess[], options: SuperviseOptions): Promise<void> {
  const outcomes = await Promise.all(children.map((child) => child.stop(options.stopTimeoutMs)));
  outcomes.forEach((outcome, i) => {
    if (outcome === "killed") {
      options.err(
        `casebook: ${children[i]!.name} ignored SIGTERM for ${options.stopTimeoutMs} ms; killed it\n`,
      );
    }
  });
}

function printReady(plans: readonly SystemPlan[], options: SuperviseOptions, notes: StartNotes): void {
  const rows = plans.map((p) => [p.name, p.url, p.engine, p.title]);
  const tryBlock = notes.render(plans);
  options.out(
    `\n${renderTable(["system", "url", "engine", "design"], rows)}\n${tryBlock === "" ? "" : `${tryBlock}\n`}`,
  );
  options.err(`casebook: ${plans.length} system(s) up; Ctrl-C stops ${plans.length > 1 ? "them" : "it"}\n`);
}

function formatTail(child: SystemProcess): string {
  const tail = child.stderrTail();
  if (tail.length === 0) return `  (${child.name} wrote nothing to stderr)\n`;
  return `  last ${tail.length} stderr line(s) of ${child.name}:\n${tail.map((l) => `    ${l}\n`).join("")}`;
}

function describeExit(info: ExitInfo): string {
  if (info.error) return `could not start: ${info.error.message}`;
  if (info.signal) return `killed by ${info.signal}`;
  return `exit code ${info.code}`;
}

/** The shell's convention: the child's code, or 128 + the signal's number when a signal ended it. */
export function exitCodeFor(info: ExitInfo): number {
  if (info.error) return 1;
  if (info.signal) return 128 + (constants.signals[info.signal] ?? 0);
  return info.code ?? 1;
}

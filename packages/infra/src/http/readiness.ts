/**
 * Readiness: "can this instance serve traffic now?" Every check (database ping,
 * Redis ping) runs concurrently with its own timeout, so one hung dependency
 * makes /readyz answer 503 naming it in `timeoutMs`, instead of hanging the
 * probe until the orchestrator kills the pod.
 *
 * @example
 * const report = await runReadinessChecks(
 *   { database: (signal) => pool.query("select 1", { signal }).then(() => {}) },
 *   { timeoutMs: 2_000, clock: systemClock },
 * );
 * report.status; // "ok" | "unavailable"
 */
import type { Clock } from "@casebook/kit/clock";
import { CasebookError } from "@casebook/kit/errors";

/** Resolves when the dependency is usable; `signal` aborts when the check has timed out. */
export type ReadinessCheck = (signal: AbortSignal) => Promise<void>;

export interface CheckResult {
  status: "ok" | "failed";
  durationMs: number;
  /** Why it failed, cut to `maxCheckErrorChars`. */
  error?: string;
}

export interface ReadinessReport {
  status: "ok" | "unavailable";
  checks: Record<string, CheckResult>;
}

/** A failing driver can put a whole stack or query in its message; the probe needs the first line's gist. */
export const maxCheckErrorChars = 200;

function describe(error: unknown): string {
  // A typed error's message is already written for the operator ("redis at … not reachable: …");
  // its class name would only add noise. Other errors keep their name: it may be all they say.
  const text =
    error instanceof CasebookError
      ? error.message
      : error instanceof Error
        ? `${error.name}: ${error.message}`
        : String(error);
  return text.length > maxCheckErrorChars ? `${text.slice(0, maxCheckErrorChars - 1)}…` : text;
}

/** Runs one check; rejects with a timeout error after `timeoutMs` and aborts the check's signal. */
function withTimeout(check: ReadinessCheck, timeoutMs: number): Promise<void> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error(`timed out after ${timeoutMs} ms`);
      error.name = "TimeoutError";
      controller.abort(error);
      reject(error);
    }, timeoutMs);
  });
  // Promise.resolve().then(): a check that throws synchronously is a failed check, not a crashed probe.
  const run = Promise.resolve().then(() => check(controller.signal));
  return Promise.race([run, timedOut]).finally(() => clearTimeout(timer));
}

async function runOne(check: ReadinessCheck, timeoutMs: number, clock: Clock): Promise<CheckResult> {
  const startMs = clock.monotonicMs();
  try {
    await withTimeout(check, timeoutMs);
    return { status: "ok", durationMs: Math.round(clock.monotonicMs() - startMs) };
  } catch (error) {
    return {
      status: "failed",
      durationMs: Math.round(clock.monotonicMs() - startMs),
      error: describe(error),
    };
  }
}

/** Runs every check concurrently, each bounded by `timeoutMs`; never rejects. */
export async function runReadinessChecks(
  checks: Readonly<Record<string, ReadinessCheck>>,
  options: { timeoutMs: number; clock: Clock },
): Promise<ReadinessReport> {
  const names = Object.keys(checks);
  const results = await Promise.all(
    names.map((name) => runOne(checks[name]!, options.timeoutMs, options.clock)),
  );
  const report: ReadinessReport = { status: "ok", checks: {} };
  names.forEach((name, i) => {
    const result = results[i]!;
    report.checks[name] = result;
    if (result.status === "failed") report.status = "unavailable";
  });
  return report;
}

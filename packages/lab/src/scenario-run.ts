/**
 * Runs one of a service's console scenarios over its HTTP API, as the console does, and waits
 * for its end: `POST /v1/scenarios/{id}/runs` (202), then `GET …/runs/{runId}` every 50 ms until
 * the run is no longer running. The run bounds itself at 60 s; the wait adds slack for a loaded
 * machine and then fails, naming the scenario, rather than hanging a test.
 *
 * @example
 * const { run, secondStart } = await runScenario(service.url, "receiver-outage", { probeSecondStart: true });
 * assert.equal(run.state, "done", JSON.stringify(run.error));
 * assert.equal(secondStart, 409); // one run at a time
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { ScenarioRun } from "@casebook/infra/http/scenario-runs";

export interface ScenarioRunOptions {
  /** Wait at most this long for the run to end (default 70 s: its own 60 s bound and slack). */
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  /** Extra request headers on the start (an admin token). */
  readonly headers?: Record<string, string>;
  /**
   * Send a second start right after the first and report its status (409 while one runs). Only
   * for a scenario that cannot end that fast: a 202 would leave a second run going.
   */
  readonly probeSecondStart?: boolean;
  /** Called with each read of the run while it still runs (to see points arrive as it goes). */
  readonly onRunning?: (run: ScenarioRun) => void;
}

export interface FinishedScenario {
  readonly run: ScenarioRun;
  /** With `probeSecondStart`: the status of a second start sent while the first ran. */
  readonly secondStart: number | undefined;
}

export async function runScenario(
  serviceUrl: string,
  id: string,
  options: ScenarioRunOptions = {},
): Promise<FinishedScenario> {
  const base = `${serviceUrl}/v1/scenarios/${id}/runs`;
  const headers = options.headers ?? {};
  const start = await fetch(base, { method: "POST", headers });
  if (start.status !== 202)
    throw new Error(`scenario ${id}: start answered ${start.status}: ${await start.text()}`);
  const { runId } = (await start.json()) as { runId: string };
  let secondStart: number | undefined;
  if (options.probeSecondStart) {
    const second = await fetch(base, { method: "POST", headers });
    await second.body?.cancel();
    secondStart = second.status;
  }
  const deadline = Date.now() + (options.timeoutMs ?? 70_000);
  for (;;) {
    const run = (await (await fetch(`${base}/${runId}`)).json()) as ScenarioRun;
    if (run.state !== "running") return { run, secondStart };
    options.onRunning?.(run);
    if (Date.now() > deadline)
      throw new Error(`scenario ${id}: still running after ${options.timeoutMs ?? 70_000} ms`);
    await sleep(options.pollMs ?? 50);
  }
}

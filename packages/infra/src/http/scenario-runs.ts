/**
 * A system's scenarios — the design text's own experiments, run on demand against the live
 * service — and the one registry of their runs, served over the system's own HTTP API:
 *
 *   GET  /v1/scenarios                  the declared scenarios (id, title, one line)
 *   POST /v1/scenarios/{id}/runs        start one → 202 `{ runId }`; 409 while any run of this
 *                                       service is running (SCENARIO_BUSY), 403 beyond loopback
 *   GET  /v1/scenarios/{id}/runs/{runId}  its state, progress (0..1), points to plot, result sentence
 *
 * Bounded: a run stops at its scenario's `timeoutMs`, else the registry's (its signal aborts,
 * the state says "timed out"), keeps at
 * most `maxPoints` points (the later ones dropped, counted in `droppedPoints`), and the registry
 * keeps the last `keepRuns` runs. Local only: a request whose peer is not loopback is refused
 * (its buttons are destructive), whatever the listener's host.
 *
 * @example
 * await registerScenarioRoutes(service.app, new ScenarioRuns([{
 *   id: "one-key", title: "20 requests, one key", line: "…", xLabel: "request", yLabel: "status",
 *   run: async (ctx) => { ctx.point("status", 1, 201); ctx.progress(1); return "1 payment"; },
 * }]));
 */
import { randomUUID } from "node:crypto";
import { defineErrors } from "@casebook/kit/errors";
import type { FastifyInstance } from "fastify";
import { isLoopbackHost } from "./loopback-guard.ts";

export const scenarioErrors = defineErrors({
  SCENARIO_NOT_FOUND: {
    status: 404,
    message: "No scenario with this id here; GET /v1/scenarios lists them.",
  },
  SCENARIO_RUN_NOT_FOUND: {
    status: 404,
    message: "No run with this id for this scenario (only the last few runs are kept).",
  },
  SCENARIO_BUSY: {
    status: 409,
    message: "A scenario is running on this service; wait for its result (GET its run) and start again.",
  },
  SCENARIO_LOCAL_ONLY: {
    status: 403,
    message: "Scenarios run only from this machine (loopback); they are destructive.",
  },
});

/** What the console shows for a scenario (its manifest's `casebook.console.scenarios` mirrors it). */
export interface ScenarioInfo {
  /** `one-key-twenty-requests`: lower-case words and dashes. */
  id: string;
  title: string;
  /** What it shows, in one line. */
  line: string;
  /** The plot's axes, in plain words with units. */
  xLabel: string;
  yLabel: string;
}

export interface ScenarioContext {
  /** Aborted at the run's time bound. */
  readonly signal: AbortSignal;
  /** 0..1. */
  progress(fraction: number): void;
  /** One point of the line `series`. */
  point(series: string, x: number, y: number): void;
}

export interface Scenario extends ScenarioInfo {
  /** This scenario's own bound on a run (one that starts a deployment of processes needs more); default the registry's. */
  timeoutMs?: number;
  /** Runs to the result sentence ("20 requests, one key: 1 payment, 20 answers with its id"). */
  run(ctx: ScenarioContext): Promise<string>;
}

export type RunState = "running" | "done" | "failed" | "timed out" | "stopped";

export interface ScenarioPoint {
  series: string;
  x: number;
  y: number;
}

export interface ScenarioRun {
  runId: string;
  scenario: string;
  /** The plot's axes, from the scenario. */
  xLabel: string;
  yLabel: string;
  state: RunState;
  startedAt: string;
  finishedAt: string | null;
  progress: number;
  points: ScenarioPoint[];
  droppedPoints: number;
  result: string | null;
  error: string | null;
}

export interface ScenarioRunsOptions {
  timeoutMs?: number;
  maxPoints?: number;
  keepRuns?: number;
}

const ID_PATTERN = /^[a-z][a-z0-9-]{0,60}$/;

export class ScenarioRuns {
  readonly #scenarios: Map<string, Scenario>;
  readonly #runs = new Map<string, ScenarioRun>();
  readonly #timeoutMs: number;
  readonly #maxPoints: number;
  readonly #keepRuns: number;
  #running: Promise<void> | undefined;
  #controller: AbortController | undefined;

  constructor(scenarios: readonly Scenario[], options: ScenarioRunsOptions = {}) {
    for (const s of scenarios) if (!ID_PATTERN.test(s.id)) throw new TypeError(`scenario id ${s.id}`);
    this.#scenarios = new Map(scenarios.map((s) => [s.id, s]));
    this.#timeoutMs = options.timeoutMs ?? 60_000;
    this.#maxPoints = options.maxPoints ?? 2_000;
    this.#keepRuns = options.keepRuns ?? 10;
  }

  list(): ScenarioInfo[] {
    return [...this.#scenarios.values()].map(({ id, title, line, xLabel, yLabel }) => ({
      id,
      title,
      line,
      xLabel,
      yLabel,
    }));
  }

  /** Starts `id`; throws SCENARIO_NOT_FOUND or SCENARIO_BUSY. */
  start(id: string): ScenarioRun {
    const scenario = this.#scenarios.get(id);
    if (scenario === undefined) throw scenarioErrors.create("SCENARIO_NOT_FOUND", { fields: { id } });
    if (this.#running !== undefined) throw scenarioErrors.create("SCENARIO_BUSY", { fields: { id } });
    const run: ScenarioRun = {
      runId: randomUUID(),
      scenario: id,
      xLabel: scenario.xLabel,
      yLabel: scenario.yLabel,
      state: "running",
      startedAt: new Date().toISOString(),
      finishedAt: null,
      progress: 0,
      points: [],
      droppedPoints: 0,
      result: null,
      error: null,
    };
    this.#runs.set(run.runId, run);
    for (const old of this.#runs.keys()) {
      if (this.#runs.size <= this.#keepRuns) break;
      if (this.#runs.get(old)?.state !== "running") this.#runs.delete(old);
    }
    this.#running = this.#execute(scenario, run).finally(() => {
      this.#running = undefined;
    });
    return run;
  }

  get(id: string, runId: string): ScenarioRun {
    const run = this.#runs.get(runId);
    if (run === undefined || run.scenario !== id)
      throw scenarioErrors.create("SCENARIO_RUN_NOT_FOUND", { fields: { id, runId } });
    return run;
  }

  /** Stops the running run, if any, and waits for it (a service's close). */
  async drain(): Promise<void> {
    this.#controller?.abort(new Error("the service is closing"));
    await this.#running;
  }

  async #execute(scenario: Scenario, run: ScenarioRun): Promise<void> {
    const controller = new AbortController();
    this.#controller = controller;
    let timedOut = false;
    const timeoutMs = scenario.timeoutMs ?? this.#timeoutMs;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new Error(`stopped at its bound of ${timeoutMs} ms`));
    }, timeoutMs);
    const ctx: ScenarioContext = {
      signal: controller.signal,
      progress: (fraction) => {
        if (run.state === "running") run.progress = Math.min(1, Math.max(run.progress, fraction));
      },
      point: (series, x, y) => {
        if (run.state !== "running") return;
        if (run.points.length >= this.#maxPoints) run.droppedPoints += 1;
        else run.points.push({ series, x, y });
      },
    };
    const bound = new Promise<never>((_, reject) =>
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true }),
    );
    bound.catch(() => undefined);
    try {
      const result = await Promise.race([scenario.run(ctx), bound]);
      run.result = result;
      run.progress = 1;
      run.state = "done";
    } catch (error) {
      run.state = timedOut ? "timed out" : controller.signal.aborted ? "stopped" : "failed";
      run.error = controller.signal.aborted
        ? String((controller.signal.reason as Error).message)
        : (error as Error).message;
    } finally {
      clearTimeout(timer);
      controller.abort(new Error("finished"));
      run.finishedAt = new Date().toISOString();
    }
  }
}

const idParams = {
  type: "object",
  required: ["id"],
  properties: { id: { type: "string", pattern: ID_PATTERN.source } },
} as const;

const text = { type: "string" } as const;
const infoSchema = {
  type: "object",
  required: ["id", "title", "line", "xLabel", "yLabel"],
  properties: { id: text, title: text, line: text, xLabel: text, yLabel: text },
} as const;
const runSchema = {
  type: "object",
  required: ["runId", "scenario", "state", "progress", "points"],
  properties: {
    runId: text,
    scenario: text,
    xLabel: text,
    yLabel: text,
    state: { type: "string", enum: ["running", "done", "failed", "timed out", "stopped"] },
    startedAt: text,
    finishedAt: { type: ["string", "null"] },
    progress: { type: "number", minimum: 0, maximum: 1 },
    points: {
      type: "array",
      items: {
        type: "object",
        required: ["series", "x", "y"],
        properties: { series: text, x: { type: "number" }, y: { type: "number" } },
      },
    },
    droppedPoints: { type: "integer" },
    result: { type: ["string", "null"], description: "The result sentence, once done" },
    error: { type: ["string", "null"] },
  },
} as const;

/** The three routes above, refusing any peer beyond loopback. */
export function registerScenarioRoutes(app: FastifyInstance, runs: ScenarioRuns): void {
  const localOnly = async (request: { socket: { remoteAddress?: string } }) => {
    const peer = request.socket.remoteAddress ?? "";
    const bare = peer.startsWith("::ffff:") ? peer.slice(7) : peer;
    if (!isLoopbackHost(bare)) throw scenarioErrors.create("SCENARIO_LOCAL_ONLY", { fields: { peer } });
  };
  app.get(
    "/v1/scenarios",
    {
      schema: {
        summary: "The scenarios this service runs on demand",
        response: {
          200: {
            type: "object",
            required: ["scenarios"],
            properties: { scenarios: { type: "array", items: infoSchema } },
          },
        },
      },
    },
    async () => ({
      scenarios: runs.list(),
    }),
  );
  app.post<{ Params: { id: string } }>(
    "/v1/scenarios/:id/runs",
    {
      schema: {
        summary: "Start a scenario (one at a time, loopback only)",
        params: idParams,
        response: {
          202: {
            type: "object",
            required: ["runId", "state"],
            properties: { runId: text, state: { type: "string", enum: ["running"] } },
          },
        },
      },
    },
    async (request, reply) => {
      await localOnly(request);
      const run = runs.start(request.params.id);
      return reply.code(202).send({ runId: run.runId, state: run.state });
    },
  );
  app.get<{ Params: { id: string; runId: string } }>(
    "/v1/scenarios/:id/runs/:runId",
    {
      schema: {
        summary: "A run's state, progress, points and result sentence",
        params: {
          type: "object",
          required: ["id", "runId"],
          properties: { ...idParams.properties, runId: { type: "string", format: "uuid" } },
        },
        response: { 200: runSchema },
      },
    },
    async (request) => {
      await localOnly(request);
      return runs.get(request.params.id, request.params.runId);
    },
  );
}

/** The loopback URL `app` listens on, for a scenario that calls its own API (after listen). */
export function ownUrl(app: FastifyInstance): string {
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("the service is not listening on TCP");
  return `http://127.0.0.1:${address.port}`;
}

/**
 * The base of every simulator of an outside service (the payments acquirer, the push
 * service, the LLM provider): a real HTTP service on the Casebook service base
 * (/healthz, /readyz, /metrics, /openapi.json, problem+json, graceful close) whose API
 * runs under a FaultInjector (`simulator-faults.ts`), with one control panel shape:
 *
 * | route | what |
 * |---|---|
 * | `GET /admin/behaviour`, `PUT /admin/behaviour` | the knobs in force; change some (the others keep their value) |
 * | `PUT /admin/faults/schedule`, `GET …` | the exact faults of the next calls, in order |
 * | `POST /admin/reset` | forget the simulator's state, counters and schedule; knobs back to the start |
 * | `GET /admin/stats` (+ `statsAliases`) | the simulator's counters and `faults: { delayedCalls, errors, … }` |
 *
 * The admin routes never see injected faults (an outage never locks the test out) and,
 * with `adminToken`, need `Authorization: Bearer <adminToken>`. The simulator's own
 * counters are also one gauge, `<metricPrefix>_operations{kind}` (faults as `fault_<kind>`).
 * The system keeps what is specific to it: its state, its API (`routes`), its knobs
 * beyond the fault knobs, and extra admin routes (`adminRoutes`).
 *
 * @example
 * const sim = createSimulator({
 *   name: "push-sim", description: "Push service simulator", metricPrefix: "push_sim", rng: seededRandom(1),
 *   behaviour: { initial: defaultFaultKnobs, merge: mergeFaultKnobs, knobs: (b) => b, schema: faultKnobsSchema },
 *   stats: () => state.stats(), reset: () => state.reset(),
 *   routes: (v1, faults) => v1.post("/v1/push", { config: { mutating: true } }, async (req, reply) =>
 *     faults.respond(req, reply, state.push(req.body))),
 * });
 * const { url } = await sim.listen({ port: 0 });
 */
import type { Clock } from "@casebook/kit/clock";
import type { CasebookError, ErrorRegistry } from "@casebook/kit/errors";
import type { RandomSource } from "@casebook/kit/random";
import type { FastifyInstance } from "fastify";
import { Gauge } from "prom-client";
import { createStaticTokenAuth } from "./bearer-auth.ts";
import { createService, type ListenOptions, type Service, type ServiceOptions } from "./service.ts";
import {
  type ErrorStatus,
  FaultInjector,
  type FaultKnobs,
  faultKnobBounds,
  faultScheduleSchema,
  type ScheduledFault,
  type Sleep,
  simulatorErrors,
} from "./simulator-faults.ts";

export interface SimulatorBehaviour<B> {
  /** The knobs at start and after POST /admin/reset. */
  initial: B;
  /** `current` with `patch` applied; throws RangeError naming a knob out of bounds. */
  merge(current: B, patch: Partial<B>): B;
  /** The fault knobs of a behaviour (the simulator may name them its own way in its API). */
  knobs(behaviour: B): FaultKnobs;
  /** JSON schema of `PUT /admin/behaviour`'s body (every knob optional, unknown ones refused). */
  schema: object;
}

export interface SimulatorOptions<B> {
  /** Service name (`acquirer-sim`): in every log line and the OpenAPI title. */
  name: string;
  version?: string;
  /** OpenAPI `info.description`. */
  description: string;
  /** Prefix of the operations gauge: `<metricPrefix>_operations`. */
  metricPrefix: string;
  rng: RandomSource;
  clock?: Clock;
  behaviour: SimulatorBehaviour<B>;
  /** The simulator's own counters since its last reset (served by /admin/stats and the gauge). */
  stats(): Record<string, number>;
  /** Forgets the simulator's own state (POST /admin/reset; the fault side resets itself). */
  reset(): void;
  /** Registers the simulated API on a scope the fault hooks are already installed on. */
  routes(scope: FastifyInstance, faults: FaultInjector<B>): void;
  /** More control routes, beside /admin/behaviour (never faulted, behind the admin token). */
  adminRoutes?(scope: FastifyInstance, faults: FaultInjector<B>): void;
  /** Paths serving the same counters as /admin/stats (a test may look under /v1 first). */
  statsAliases?: readonly string[];
  /** OpenAPI summaries of the reset and stats routes, to say what this simulator forgets and counts. */
  summaries?: { reset?: string; stats?: string };
  /** When set, /admin/* and the stats aliases need `Authorization: Bearer <adminToken>`. */
  adminToken?: string;
  /** The error an `error` fault throws (default SIMULATED_*), and the outage's (default SIMULATED_OUTAGE). */
  errorFor?(status: ErrorStatus): CasebookError;
  outageError?(): CasebookError;
  /** The simulator's error registry (`simulatorErrors` is added unless both errors above are given). */
  errors?: readonly ErrorRegistry<string>[];
  /** Injected in tests to observe latency without waiting for it. */
  sleep?: Sleep;
  /** The simulated service's own error shape on its API paths (an LLM provider's `{error:{…}}`). */
  errorFormats?: ServiceOptions["errorFormats"];
  log?: ServiceOptions["log"];
  defaultMetrics?: boolean;
}

export interface Simulator<B> {
  readonly service: Service;
  readonly faults: FaultInjector<B>;
  listen(options: ListenOptions): Promise<{ url: string }>;
  /** Cuts the sockets held by lost responses, then closes the service gracefully. */
  close(): Promise<void>;
}

/** JSON schema of the generic fault knobs, for a `behaviour.schema` (spread it into the simulator's own). */
export const faultKnobsSchemaProperties = {
  latencyMs: numberKnob(faultKnobBounds.latencyMs, true),
  latencyJitterMs: numberKnob(faultKnobBounds.latencyJitterMs, true),
  errorRate: numberKnob(faultKnobBounds.errorRate, false),
  lostResponseRate: numberKnob(faultKnobBounds.lostResponseRate, false),
  lostResponseMode: { type: "string", enum: ["hang", "reset"] },
  hangMs: numberKnob(faultKnobBounds.hangMs, true),
  outage: { type: "boolean" },
  outageMode: { type: "string", enum: ["refuse", "reset"] },
} as const;

/** A JSON schema number knob within `bounds`. */
export function numberKnob(bounds: { min: number; max: number }, integer: boolean) {
  return { type: integer ? "integer" : "number", minimum: bounds.min, maximum: bounds.max } as const;
}

const tags = ["admin"];

const counter = { type: "integer", minimum: 0 } as const;

/** /admin/stats: the simulator's own counters (names vary by simulator), and the fault counters. */
const statsSchema = {
  type: "object",
  required: ["faults"],
  additionalProperties: { type: "number" },
  properties: {
    faults: {
      type: "object",
      required: [
        "heldSockets",
        "delayedCalls",
        "errors",
        "outageRefusals",
        "connectionResets",
        "responsesLost",
      ],
      additionalProperties: false,
      properties: {
        heldSockets: counter,
        delayedCalls: counter,
        errors: counter,
        outageRefusals: counter,
        connectionResets: counter,
        responsesLost: counter,
      },
    },
  },
} as const;

const resetSchema = {
  type: "object",
  required: ["reset"],
  additionalProperties: false,
  properties: { reset: { type: "boolean", const: true } },
} as const;

function registerControlPanel<B>(
  app: FastifyInstance,
  options: SimulatorOptions<B>,
  faults: FaultInjector<B>,
) {
  app.get(
    "/admin/behaviour",
    { schema: { summary: "The failure knobs in force", tags, response: { 200: options.behaviour.schema } } },
    async () => faults.behaviour,
  );
  app.put<{ Body: Partial<B> }>(
    "/admin/behaviour",
    {
      schema: {
        summary: "Change some failure knobs; the others keep their value",
        tags,
        body: options.behaviour.schema,
        response: { 200: options.behaviour.schema },
      },
    },
    async (request) => faults.update(request.body as Partial<B>),
  );
  app.get(
    "/admin/faults/schedule",
    {
      schema: { summary: "The scheduled faults not taken yet", tags, response: { 200: faultScheduleSchema } },
    },
    async () => ({ faults: faults.scheduled() }),
  );
  app.put<{ Body: { faults: ScheduledFault[] } }>(
    "/admin/faults/schedule",
    {
      schema: {
        summary:
          "The exact faults of the next calls, in order, before the random knobs (replaces the schedule)",
        tags,
        body: faultScheduleSchema,
        response: { 200: faultScheduleSchema },
      },
    },
    async (request) => {
      faults.schedule(request.body.faults);
      return { faults: faults.scheduled() };
    },
  );
  const resetSummary =
    options.summaries?.reset ??
    "Forget the simulator's state, counters and schedule; knobs back to the start";
  app.post(
    "/admin/reset",
    { schema: { summary: resetSummary, tags, response: { 200: resetSchema } } },
    async () => {
      options.reset();
      faults.reset();
      return { reset: true };
    },
  );
  const stats = async () => ({ ...options.stats(), faults: faults.counters() });
  const statsSummary = options.summaries?.stats ?? "Counters: operations and faults";
  app.get("/admin/stats", { schema: { summary: statsSummary, tags, response: { 200: statsSchema } } }, stats);
  // Registered here, outside the fault hooks, so an outage cannot hide the counters.
  for (const path of options.statsAliases ?? []) {
    app.get(
      path,
      {
        schema: {
          summary: "Counters (same as /admin/stats; never faulted)",
          tags,
          response: { 200: statsSchema },
        },
      },
      stats,
    );
  }
}

function registerMetrics<B>(service: Service, options: SimulatorOptions<B>, faults: FaultInjector<B>): void {
  new Gauge({
    name: `${options.metricPrefix}_operations`,
    help: "Operations the simulator has done since its last reset, by kind",
    labelNames: ["kind"],
    registers: [service.registry],
    collect() {
      for (const [kind, value] of Object.entries(options.stats())) this.set({ kind }, value);
      for (const [kind, value] of Object.entries(faults.counters()))
        this.set({ kind: `fault_${kind}` }, value);
    },
  });
}

/** Creates the simulator (routes registered, not listening). */
export function createSimulator<B>(options: SimulatorOptions<B>): Simulator<B> {
  const faults = new FaultInjector<B>({
    rng: options.rng,
    initial: options.behaviour.initial,
    merge: options.behaviour.merge,
    knobs: options.behaviour.knobs,
    ...(options.errorFor ? { errorFor: options.errorFor } : {}),
    ...(options.outageError ? { outageError: options.outageError } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
  });
  const service = createService({
    name: options.name,
    version: options.version ?? "0.1.0",
    ...(options.clock ? { clock: options.clock } : {}),
    log: options.log ?? { level: "info" },
    // simulatorErrors only when a default answers with them: an acquirer's OpenAPI lists its own codes.
    errors: [
      ...(options.errors ?? []),
      ...(options.errorFor && options.outageError ? [] : [simulatorErrors]),
    ],
    defaultMetrics: options.defaultMetrics ?? true,
    description: options.description,
    ...(options.errorFormats ? { errorFormats: options.errorFormats } : {}),
  });
  service.app.register(async (api) => {
    faults.install(api);
    options.routes(api, faults);
  });
  service.app.register(async (admin) => {
    if (options.adminToken !== undefined)
      admin.addHook("onRequest", createStaticTokenAuth({ realm: options.name, token: options.adminToken }));
    registerControlPanel(admin, options, faults);
    options.adminRoutes?.(admin, faults);
  });
  // Hung sockets would otherwise hold the graceful drain for its whole timeout.
  service.app.addHook("preClose", async () => faults.releaseHeld());
  registerMetrics(service, options, faults);
  return {
    service,
    faults,
    listen: (listenOptions) => service.listen(listenOptions),
    close: () => {
      faults.releaseHeld();
      return service.close();
    },
  };
}

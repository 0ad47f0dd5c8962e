/**
 * Builds the acquirer simulator: a real HTTP service (the Casebook service base:
 * /healthz, /readyz, /metrics, /openapi.json, problem+json, graceful close) that
 * stands in for the card acquirer outside the payments system, with the failure
 * modes the design text turns on — declines, latency, 5xx before charging, an
 * outage, and a charge whose response is lost (PY-06, PY-12, PY-13) — and a D+1
 * settlement file with injectable differences (PY-10).
 *
 * State lives in memory (bounded by `maxPayments`, emptied by POST /admin/reset);
 * time and randomness are injected, so a test with a ManualClock and a seed sees
 * the same ids, declines and faults on every run.
 *
 * @example
 * const sim = createAcquirerSim({ clock: new ManualClock(Date.UTC(2026, 9, 22)), rng: seededRandom(1) });
 * const { url } = await sim.listen({ port: 0 });
 * await fetch(`${url}/v1/authorizations`, { method: "POST", headers, body });
 * await sim.close();
 */
import { timingSafeEqual } from "node:crypto";
import {
  createService,
  type ListenOptions,
  type Service,
  type ServiceOptions,
} from "@casebook/infra/http/service";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { commonErrors } from "@casebook/kit/errors";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { Gauge } from "prom-client";
import { registerAdminRoutes } from "./acquirer-admin-routes.ts";
import { type Behaviour, defaultBehaviour, mergeBehaviour } from "./acquirer-behaviour.ts";
import { acquirerErrors } from "./acquirer-errors.ts";
import { FaultInjector, type Sleep } from "./acquirer-faults.ts";
import { registerAcquirerRoutes } from "./acquirer-routes.ts";
import { AcquirerState } from "./acquirer-state.ts";

export const defaultMaxPayments = 100_000;

export interface AcquirerSimOptions {
  clock?: Clock;
  rng?: RandomSource;
  /** Bound on authorizations held in memory. */
  maxPayments?: number;
  maxRefundsPerAuthorization?: number;
  /** Knobs at start and after POST /admin/reset (merged over the defaults). */
  behaviour?: Partial<Behaviour>;
  /** When set, /admin/* and /v1/stats need `Authorization: Bearer <adminToken>`. */
  adminToken?: string;
  /** Injected in tests to observe latency without waiting for it. */
  sleep?: Sleep;
  log?: ServiceOptions["log"];
  defaultMetrics?: boolean;
}

export interface AcquirerSim {
  readonly service: Service;
  readonly state: AcquirerState;
  readonly faults: FaultInjector;
  listen(options: ListenOptions): Promise<{ url: string }>;
  /** Cuts the sockets held by lost responses, then closes the service gracefully. */
  close(): Promise<void>;
}

function bearerGuard(adminToken: string) {
  const expected = Buffer.from(adminToken);
  return async (request: { headers: Record<string, string | string[] | undefined> }) => {
    const header = request.headers.authorization;
    if (typeof header !== "string" || !header.startsWith("Bearer "))
      throw commonErrors.create("AUTH_MISSING");
    const given = Buffer.from(header.slice("Bearer ".length));
    // Constant time: the admin token must not leak a byte at a time through response timing.
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw commonErrors.create("AUTH_INVALID");
  };
}

function registerMetrics(service: Service, state: AcquirerState, faults: FaultInjector): void {
  new Gauge({
    name: "acquirer_sim_operations",
    help: "Operations the simulator has done since its last reset, by kind",
    labelNames: ["kind"],
    registers: [service.registry],
    collect() {
      for (const [kind, value] of Object.entries(state.stats())) this.set({ kind }, value);
      for (const [kind, value] of Object.entries(faults.counters()))
        this.set({ kind: `fault_${kind}` }, value);
    },
  });
}

/** Creates the simulator (routes registered, not listening). */
export function createAcquirerSim(options: AcquirerSimOptions = {}): AcquirerSim {
  const clock = options.clock ?? systemClock;
  const rng = options.rng ?? systemRandom;
  const state = new AcquirerState({
    clock,
    rng,
    maxPayments: options.maxPayments ?? defaultMaxPayments,
    maxRefundsPerAuthorization: options.maxRefundsPerAuthorization,
  });
  const faults = new FaultInjector({
    rng,
    initial: mergeBehaviour(defaultBehaviour, options.behaviour ?? {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
  });
  const service = createService({
    name: "acquirer-sim",
    version: "0.1.0",
    clock,
    log: options.log ?? { level: "info" },
    errors: [acquirerErrors],
    defaultMetrics: options.defaultMetrics ?? true,
    description:
      "Card acquirer simulator for the payments system (seed 000 §4): authorize, capture, void, refund, D+1 settlement file, injected failures",
  });
  const deps = { state, faults };
  service.app.register(async (v1) => registerAcquirerRoutes(v1, deps));
  service.app.register(async (admin) => {
    if (options.adminToken !== undefined) admin.addHook("onRequest", bearerGuard(options.adminToken));
    registerAdminRoutes(admin, deps);
  });
  // Hung sockets would otherwise hold the graceful drain for its whole timeout.
  service.app.addHook("preClose", async () => faults.releaseHeld());
  registerMetrics(service, state, faults);
  return {
    service,
    state,
    faults,
    listen: (listenOptions) => service.listen(listenOptions),
    close: () => {
      faults.releaseHeld();
      return service.close();
    },
  };
}

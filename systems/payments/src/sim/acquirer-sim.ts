/**
 * Builds the acquirer simulator: a real HTTP service (the Casebook service base:
 * /healthz, /readyz, /metrics, /openapi.json, problem+json, graceful close) that
 * stands in for the card acquirer outside the payments system, with the failure
 * modes the design text turns on — declines, latency, 5xx before charging, an
 * outage, and a charge whose response is lost (PY-06, PY-12, PY-13) — and a D+1
 * settlement file with injectable differences (PY-10).
 *
 * Built on infra's simulator base (`@casebook/infra/http/simulator`): the fault hooks,
 * /admin/behaviour, /admin/faults/schedule, /admin/reset, /admin/stats, the admin token
 * and the operations gauge are the base's; the acquirer adds its state, its /v1 API,
 * its knobs (declines, a merchant rate limit, the fee), the settlement differences and
 * its arrivals per second (/admin/arrivals).
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
import { createSimulator, type Simulator, type SimulatorOptions } from "@casebook/infra/http/simulator";
import type { FaultInjector, Sleep } from "@casebook/infra/http/simulator-faults";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { registerAdminRoutes } from "./acquirer-admin-routes.ts";
import { type Behaviour, defaultBehaviour, faultKnobsOf, mergeBehaviour } from "./acquirer-behaviour.ts";
import { acquirerErrors } from "./acquirer-errors.ts";
import { registerAcquirerRoutes, type SettlementTiming } from "./acquirer-routes.ts";
import { behaviourSchema } from "./acquirer-schemas.ts";
import { AcquirerState } from "./acquirer-state.ts";
import { ArrivalRecord } from "./arrival-record.ts";

export const defaultMaxPayments = 100_000;

export interface AcquirerSimOptions {
  clock?: Clock;
  rng?: RandomSource;
  /** Bound on authorizations held in memory. */
  maxPayments?: number;
  maxRefundsPerAuthorization?: number;
  /** Knobs at start and after POST /admin/reset (merged over the defaults). */
  behaviour?: Partial<Behaviour>;
  /** When a day's settlement file is published (default `d+1`; `immediate` for a demo). */
  settlement?: SettlementTiming;
  /** When set, /admin/* and /v1/stats need `Authorization: Bearer <adminToken>`. */
  adminToken?: string;
  /** Injected in tests to observe latency without waiting for it. */
  sleep?: Sleep;
  log?: SimulatorOptions<Behaviour>["log"];
  defaultMetrics?: boolean;
}

export interface AcquirerSim extends Simulator<Behaviour> {
  readonly state: AcquirerState;
  /** Calls per second as they arrived (also GET /admin/arrivals). */
  readonly arrivals: ArrivalRecord;
  readonly faults: FaultInjector<Behaviour>;
}

/** Retry-After of a simulated outage: the caller's breaker decides, this only hints. */
const outageRetryAfterMs = 1_000;

const errorCodeByStatus = {
  500: "ACQUIRER_INTERNAL_FAILURE",
  502: "ACQUIRER_UPSTREAM_FAILED",
  503: "ACQUIRER_OVERLOADED",
} as const;

/** Creates the simulator (routes registered, not listening). */
export function createAcquirerSim(options: AcquirerSimOptions = {}): AcquirerSim {
  const clock = options.clock ?? systemClock;
  const rng = options.rng ?? systemRandom;
  const settlement = options.settlement ?? "d+1";
  const state = new AcquirerState({
    clock,
    rng,
    maxPayments: options.maxPayments ?? defaultMaxPayments,
    maxRefundsPerAuthorization: options.maxRefundsPerAuthorization,
  });
  const arrivals = new ArrivalRecord();
  const sim = createSimulator<Behaviour>({
    name: "acquirer-sim",
    version: "0.1.0",
    description:
      "Card acquirer simulator for the payments system (seed 000 §4): authorize, capture, void, refund, D+1 settlement file, injected failures",
    metricPrefix: "acquirer_sim",
    clock,
    rng,
    behaviour: {
      initial: mergeBehaviour(defaultBehaviour, options.behaviour ?? {}),
      merge: mergeBehaviour,
      knobs: faultKnobsOf,
      schema: behaviourSchema,
    },
    stats: () => ({ ...state.stats() }),
    reset: () => {
      state.reset();
      arrivals.reset();
    },
    routes: (v1, faults) => registerAcquirerRoutes(v1, { state, faults, arrivals, settlement }),
    adminRoutes: (admin, faults) => registerAdminRoutes(admin, { state, faults, arrivals, settlement }),
    statsAliases: ["/v1/stats"],
    summaries: {
      reset: "Forget every payment, counter and injected difference; knobs back to the start",
      stats: "Counters: authorizations, attempts, faults",
    },
    errorFor: (status) => acquirerErrors.create(errorCodeByStatus[status]),
    outageError: () =>
      acquirerErrors.create("ACQUIRER_OUTAGE", { fields: { retryAfterMs: outageRetryAfterMs } }),
    errors: [acquirerErrors],
    ...(options.adminToken === undefined ? {} : { adminToken: options.adminToken }),
    ...(options.sleep ? { sleep: options.sleep } : {}),
    log: options.log ?? { level: "info" },
    defaultMetrics: options.defaultMetrics ?? true,
  });
  return { ...sim, state, arrivals };
}

/**
 * Builds the LLM provider simulator: a real HTTP service on infra's simulator base that
 * speaks OpenAI's chat completions and Anthropic's Messages (SSE streams as the real APIs
 * send them), with per-model time to first token, tokens per second, answer length, 429s,
 * errors, stream cuts and pauses (`provider-behaviour.ts`), its own tokenizer
 * (`sim-tokenizer.ts`) for the usage it reports, and a record of every generation
 * (`provider-state.ts`) — the gateway's tests read there how many tokens were generated
 * after their client left (LG-04). The base adds /admin/behaviour, /admin/faults/schedule,
 * /admin/reset, /admin/stats, latency, 5xx and outages.
 *
 * @example
 * const sim = createProviderSim({ rng: seededRandom(1) });
 * const { url } = await sim.listen({ port: 0 });
 * new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused" });
 */
import { createSimulator, type Simulator, type SimulatorOptions } from "@casebook/infra/http/simulator";
import type { Sleep } from "@casebook/infra/http/simulator-faults";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { llmErrorFormats } from "../api/error-formats.ts";
import { registerProviderAdminRoutes } from "./provider-admin-routes.ts";
import {
  behaviourSchema,
  defaultBehaviour,
  faultKnobsOf,
  mergeBehaviour,
  type ProviderBehaviour,
} from "./provider-behaviour.ts";
import { providerErrors } from "./provider-errors.ts";
import { registerProviderRoutes } from "./provider-routes.ts";
import { ProviderState } from "./provider-state.ts";

export interface ProviderSimOptions {
  clock?: Clock;
  rng?: RandomSource;
  /** Knobs at start and after POST /admin/reset (merged over the defaults). */
  behaviour?: Partial<ProviderBehaviour>;
  /** When set, /admin/* needs `Authorization: Bearer <adminToken>`. */
  adminToken?: string;
  sleep?: Sleep;
  log?: SimulatorOptions<ProviderBehaviour>["log"];
  defaultMetrics?: boolean;
}

export interface ProviderSim extends Simulator<ProviderBehaviour> {
  readonly state: ProviderState;
}

/** Retry-After of a simulated outage: the gateway's breaker decides, this only hints. */
const outageRetryAfterMs = 1_000;

const errorCodeByStatus = {
  500: "PROVIDER_SERVER_ERROR",
  502: "PROVIDER_UPSTREAM_FAILED",
  503: "PROVIDER_OVERLOADED",
} as const;

export function createProviderSim(options: ProviderSimOptions = {}): ProviderSim {
  const clock = options.clock ?? systemClock;
  const rng = options.rng ?? systemRandom;
  const state = new ProviderState();
  const sim = createSimulator<ProviderBehaviour>({
    name: "llm-provider-sim",
    version: "0.1.0",
    description:
      "LLM provider simulator for the llm-gateway (seed 000 §11): OpenAI chat completions and Anthropic Messages, streamed, with per-model TTFT, pace, 429s, errors, cuts and pauses",
    metricPrefix: "llm_provider_sim",
    clock,
    rng,
    behaviour: {
      initial: mergeBehaviour(defaultBehaviour, options.behaviour ?? {}),
      merge: mergeBehaviour,
      knobs: faultKnobsOf,
      schema: behaviourSchema,
    },
    stats: () => state.stats(),
    reset: () => state.reset(),
    routes: (v1, faults) => registerProviderRoutes(v1, { state, faults, clock, rng }),
    adminRoutes: (admin, faults) => registerProviderAdminRoutes(admin, { state, faults }),
    summaries: {
      reset: "Forget every generation and counter; knobs and models back to the start",
      stats: "Counters: requests, streams, tokens in and out, 429s, errors, cuts, client closes, faults",
    },
    errorFor: (status) => providerErrors.create(errorCodeByStatus[status]),
    outageError: () =>
      providerErrors.create("PROVIDER_OUTAGE", { fields: { retryAfterMs: outageRetryAfterMs } }),
    errors: [providerErrors],
    errorFormats: llmErrorFormats,
    ...(options.adminToken === undefined ? {} : { adminToken: options.adminToken }),
    ...(options.sleep ? { sleep: options.sleep } : {}),
    log: options.log ?? { level: "info" },
    defaultMetrics: options.defaultMetrics ?? true,
  });
  return { ...sim, state };
}

/**
 * The Prometheus metrics of llm-gateway (LG-16, per model): requests by outcome, time to first
 * token, tokens in and out as the provider counted them, keep-alive comments, open streams.
 * Registered on the service's own registry (served at /metrics beside the base's HTTP
 * histogram and the Node process metrics).
 *
 * @example
 * const metrics = createMetrics(service.registry, { version: "0.1.0" });
 * metrics.requests.inc({ model: "gpt-4o-mini", outcome: "ok" });
 */
import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** How a request ended: `truncated` is a provider stream cut before its end (never a success). */
export type Outcome = "ok" | "cached" | "cancelled" | "truncated" | "upstream_error" | "rate_limited";

export interface SystemMetrics {
  /** Always 1, labelled with the running version: joins a dashboard's series to a deploy. */
  readonly buildInfo: Gauge<"version">;
  readonly requests: Counter<"model" | "outcome">;
  readonly ttft: Histogram<"model">;
  readonly tokens: Counter<"model" | "kind">;
  readonly keepAlives: Counter<"model">;
  readonly openStreams: Gauge<"model">;
  /** LG-10: requests served by another model or tier than the primary. */
  readonly fallbacks: Counter<"model" | "to" | "kind">;
  /** LG-11: semantic cache lookups by result (hit, miss, skipped) and their duration. */
  readonly cacheLookups: Counter<"model" | "result">;
  readonly cacheLookupSeconds: Histogram<"model">;
  /** Semantic cache inserts by result: written, shed (the writer's queue was full), failed. */
  readonly cacheWrites: Counter<"result">;
  /** Cost per logical model in US dollars, from the price table (cached prompt tokens at their price). */
  readonly costUsd: Counter<"model">;
  /** Requests let through unmetered because the counter was down (fail open), by budget. */
  readonly unmetered: Counter<"budget">;
  /** LG-08: breaker transitions per deployment. */
  readonly breakerTransitions: Counter<"deployment" | "to" | "reason">;
  /** LG-16: what each deployment's breaker was told, per call: success or failure. */
  readonly breakerOutcomes: Counter<"deployment" | "outcome">;
  /** LG-16: provider failures per logical model and deployment, by kind (429, 5xx, timeout, unreachable, truncated). */
  readonly upstreamFailures: Counter<"model" | "deployment" | "kind">;
  /** LG-16: time to first token per deployment (the breaker's own measure; `ttft` is per logical model). */
  readonly deploymentTtft: Histogram<"deployment">;
  /** Usage rows by fate: written (batched), direct (the buffer was full: written by the request), lost (every attempt failed). */
  readonly usageRows: Counter<"result">;
}

/** The breaker states as a gauge's values (0 closed, 1 half-open, 2 open). */
export const BREAKER_STATE_VALUE = { closed: 0, "half-open": 1, open: 2 } as const;

export function createMetrics(
  registry: Registry,
  build: { version: string },
  /** Each deployment's breaker state, read at scrape time (the open → half-open step is lazy). */
  breakerStates: () => ReadonlyArray<{
    deployment: string;
    state: keyof typeof BREAKER_STATE_VALUE;
  }> = () => [],
): SystemMetrics {
  new Gauge({
    name: "llm_gateway_destination_state",
    help: "Each deployment's circuit breaker: 0 closed, 1 half-open, 2 open (LG-08)",
    labelNames: ["deployment"],
    registers: [registry],
    collect() {
      this.reset();
      for (const { deployment, state } of breakerStates())
        this.set({ deployment }, BREAKER_STATE_VALUE[state]);
    },
  });
  const buildInfo = new Gauge({
    name: "llm_gateway_build_info",
    help: "Always 1; the version label says which build is running",
    labelNames: ["version"],
    registers: [registry],
  });
  buildInfo.set({ version: build.version }, 1);
  return {
    buildInfo,
    requests: new Counter({
      name: "llm_gateway_requests_total",
      help: "Chat completions by logical model and outcome (ok, cached, cancelled, truncated, upstream_error, rate_limited)",
      labelNames: ["model", "outcome"],
      registers: [registry],
    }),
    ttft: new Histogram({
      name: "llm_gateway_ttft_seconds",
      help: "Time to first token: request received → first content chunk relayed (streams)",
      labelNames: ["model"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32],
      registers: [registry],
    }),
    tokens: new Counter({
      name: "llm_gateway_tokens_total",
      help: "Tokens as the provider reported them, by kind (prompt, completion, cached_prompt: the provider's prompt cache, LG-13); a cut stream counts the chunks relayed",
      labelNames: ["model", "kind"],
      registers: [registry],
    }),
    keepAlives: new Counter({
      name: "llm_gateway_keep_alives_total",
      help: "SSE keep-alive comments written during silent stretches of a stream (LG-03)",
      labelNames: ["model"],
      registers: [registry],
    }),
    openStreams: new Gauge({
      name: "llm_gateway_open_streams",
      help: "Streams being relayed right now",
      labelNames: ["model"],
      registers: [registry],
    }),
    fallbacks: new Counter({
      name: "llm_gateway_fallbacks_total",
      help: "Requests answered by a fallback deployment (LG-10), by logical model, the deployment that answered and kind (model, destination)",
      labelNames: ["model", "to", "kind"],
      registers: [registry],
    }),
    cacheLookups: new Counter({
      name: "llm_gateway_cache_lookups_total",
      help: "Semantic cache lookups (LG-11) by logical model and result: hit, miss, refused (similar vectors, words that disagree), skipped (not deterministic), shed (lookups at their bound: answered uncached)",
      labelNames: ["model", "result"],
      registers: [registry],
    }),
    cacheLookupSeconds: new Histogram({
      name: "llm_gateway_cache_lookup_seconds",
      help: "Time of one semantic cache lookup (an exact scan of the tenant's entries of one scope)",
      labelNames: ["model"],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    cacheWrites: new Counter({
      name: "llm_gateway_cache_writes_total",
      help: "Semantic cache inserts (batched, off the request path) by result: written, shed (the writer's queue was full: not remembered), failed (logged)",
      labelNames: ["result"],
      registers: [registry],
    }),
    costUsd: new Counter({
      name: "llm_gateway_cost_usd_total",
      help: "What the requests cost by logical model, in US dollars, from the price table (the provider's cached prompt tokens at the cached price)",
      labelNames: ["model"],
      registers: [registry],
    }),
    unmetered: new Counter({
      name: "llm_gateway_unmetered_total",
      help: "Requests let through without a budget because the counter could not be reached (LLM_GATEWAY_BUDGET_FAIL_MODE=open), by budget (tokens, destination, spend)",
      labelNames: ["budget"],
      registers: [registry],
    }),
    breakerTransitions: new Counter({
      name: "llm_gateway_breaker_transitions_total",
      help: "Circuit breaker state changes per deployment (LG-08), by the state entered and why",
      labelNames: ["deployment", "to", "reason"],
      registers: [registry],
    }),
    breakerOutcomes: new Counter({
      name: "llm_gateway_breaker_outcomes_total",
      help: "Calls as each deployment's circuit breaker counted them (LG-08/16): success, or failure (5xx, 429, reset, timeout, a first token later than LLM_GATEWAY_BREAKER_TTFT_MS, a cut before it)",
      labelNames: ["deployment", "outcome"],
      registers: [registry],
    }),
    upstreamFailures: new Counter({
      name: "llm_gateway_upstream_failures_total",
      help: "Provider failures per logical model and deployment (LG-16), by kind: 429, 5xx, timeout (no head in time), unreachable (refused, reset), truncated (a stream cut); a first token past the breaker's bound is in llm_gateway_breaker_outcomes_total and llm_gateway_deployment_ttft_seconds",
      labelNames: ["model", "deployment", "kind"],
      registers: [registry],
    }),
    deploymentTtft: new Histogram({
      name: "llm_gateway_deployment_ttft_seconds",
      help: "Time to first token per deployment (model@destination), from the call to the first content chunk (streams): what the breaker judges",
      labelNames: ["deployment"],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32],
      registers: [registry],
    }),
    usageRows: new Counter({
      name: "llm_gateway_usage_rows_total",
      help: "Usage rows (what cost accounting reads) by fate: written (in a batch), direct (the buffer was full: the request wrote its own row, backpressure), lost (every attempt failed: logged whole)",
      labelNames: ["result"],
      registers: [registry],
    }),
  };
}

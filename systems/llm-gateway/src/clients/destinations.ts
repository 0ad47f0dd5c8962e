/**
 * The destinations a gateway calls and their health (LG-08, LG-09, LG-16, LG-19): one
 * upstream client per configured destination (an OpenAI-compatible base URL), and one circuit
 * breaker per deployment (a model on a destination: kit's `CircuitBreaker`) fed by what the
 * per-model metrics see — time to first token above `ttftMs` counts as a failure the moment
 * the bound passes (a degrading model is seen while its requests are still waiting, not
 * after), and so do the provider's 5xx, 429s, resets and timeouts; consecutive failures or a
 * failure rate open it, and an open deployment is skipped until its probe succeeds.
 *
 * A request holds an `Admission` from the moment a deployment takes it to its first token
 * (or its end): exactly one outcome is reported per admission, whichever comes first.
 *
 * @example
 * const destinations = new Destinations({ upstreams, clock, breaker: { ttftMs: 10_000, failureThreshold: 5, openDurationMs: 30_000, failureRatePercent: 50 } });
 * for (const c of destinations.candidates(model)) { const a = destinations.admit(c.deployment, { ttft: true }); … }
 */
import { type BreakerState, CircuitBreaker } from "@casebook/kit/circuit-breaker";
import type { Clock } from "@casebook/kit/clock";
import type { Deployment, ModelCatalog, ServedModel } from "../domain/model-catalog.ts";
import { type Candidate, orderDeployments } from "../domain/route-order.ts";
import type { UpstreamClient } from "./upstream-client.ts";

export interface BreakerSettings {
  /** A first token later than this is a failure of the deployment. */
  readonly ttftMs: number;
  /** Consecutive failures that open a breaker. */
  readonly failureThreshold: number;
  /** Failure percentage over the last 20 calls (at least 10) that opens it. */
  readonly failureRatePercent: number;
  /** How long an open breaker skips its deployment before one probe is let through. */
  readonly openDurationMs: number;
}

export interface DestinationView {
  readonly deployment: string;
  readonly destination: string;
  readonly upstreamModel: string;
  readonly state: BreakerState;
  readonly inFlight: number;
  readonly consecutiveFailures: number;
  readonly windowCalls: number;
  readonly windowFailures: number;
  readonly retryAfterMs: number;
}

/** One request's hold on a deployment, from admission to its first token or its end. */
export interface Admission {
  readonly deployment: Deployment;
  readonly upstream: UpstreamClient;
  /** The first content token (or a whole answer) arrived: a success if within the TTFT bound. */
  firstToken(): void;
  /** The call failed on the provider's side (5xx, 429, reset, timeout, a cut before the first token). */
  failed(): void;
  /** The request is over; an admission with no outcome yet reports none that blames the deployment. */
  release(): void;
}

interface Slot {
  readonly deployment: Deployment;
  readonly breaker: CircuitBreaker;
  inFlight: number;
}

export class Destinations {
  readonly #slots = new Map<string, Slot>();
  readonly #upstreams: ReadonlyMap<string, UpstreamClient>;
  readonly #clock: Clock;
  readonly #settings: BreakerSettings;
  readonly #onOutcome: ((deployment: Deployment, outcome: "success" | "failure") => void) | undefined;
  #turn = 0;

  constructor(options: {
    catalog: ModelCatalog;
    upstreams: ReadonlyMap<string, UpstreamClient>;
    clock: Clock;
    breaker: BreakerSettings;
    onStateChange?: (deployment: Deployment, to: BreakerState, reason: string) => void;
    /** Each outcome a breaker is told (LG-16's metrics). */
    onOutcome?: (deployment: Deployment, outcome: "success" | "failure") => void;
  }) {
    this.#upstreams = options.upstreams;
    this.#clock = options.clock;
    this.#settings = options.breaker;
    this.#onOutcome = options.onOutcome;
    for (const model of options.catalog.values()) {
      for (const deployment of model.tiers.flat()) {
        if (this.#slots.has(deployment.id)) continue;
        if (!options.upstreams.has(deployment.destination))
          throw new RangeError(`deployment ${deployment.id}: no destination ${deployment.destination}`);
        const breaker = new CircuitBreaker({
          name: deployment.id,
          clock: options.clock,
          failureThreshold: options.breaker.failureThreshold,
          failureRate: { windowCalls: 20, minCalls: 10, threshold: options.breaker.failureRatePercent / 100 },
          openDurationMs: options.breaker.openDurationMs,
          // A probe has its TTFT bound to prove itself (plus the time to reach the provider).
          probeTimeoutMs: options.breaker.ttftMs + 5_000,
        });
        const onChange = options.onStateChange;
        if (onChange) breaker.onStateChange((c) => onChange(deployment, c.to, c.reason));
        this.#slots.set(deployment.id, { deployment, breaker, inFlight: 0 });
      }
    }
  }

  /** The deployments of a model in the order a request tries them. */
  candidates(model: ServedModel): Candidate[] {
    this.#turn = (this.#turn + 1) % 1_000_000;
    return orderDeployments(model.tiers, (d) => this.#slot(d).inFlight, this.#turn);
  }

  /** True when the deployment's breaker is open (no call, no permit taken). */
  isOpen(deployment: Deployment): boolean {
    return this.#slot(deployment).breaker.state === "open";
  }

  /** Milliseconds until an open deployment may be tried again. */
  retryAfterMs(deployment: Deployment): number {
    return this.#slot(deployment).breaker.retryAfterMs();
  }

  /** A hold on the deployment, or undefined when its breaker refuses (open, or its probe slot taken). */
  admit(deployment: Deployment, options: { ttft: boolean }): Admission | undefined {
    const slot = this.#slot(deployment);
    if (!slot.breaker.canRequest()) return undefined;
    slot.inFlight += 1;
    const startedMs = this.#clock.monotonicMs();
    let reported = false;
    let released = false;
    const report = (failure: boolean) => {
      if (reported) return;
      reported = true;
      clearTimeout(timer);
      if (failure) slot.breaker.onFailure();
      else slot.breaker.onSuccess();
      this.#onOutcome?.(deployment, failure ? "failure" : "success");
    };
    const timer = options.ttft ? setTimeout(() => report(true), this.#settings.ttftMs) : undefined;
    timer?.unref();
    return {
      deployment,
      upstream: this.#upstreams.get(deployment.destination) as UpstreamClient,
      firstToken: () => report(this.#clock.monotonicMs() - startedMs > this.#settings.ttftMs),
      failed: () => report(true),
      release: () => {
        if (released) return;
        released = true;
        slot.inFlight -= 1;
        // Ended before any outcome (the client left, the provider refused the request as invalid):
        // nothing against the deployment, and its probe slot is freed.
        report(false);
      },
    };
  }

  /** Every deployment's breaker and load, for the admin endpoint and the metrics. */
  snapshot(): DestinationView[] {
    return [...this.#slots.values()].map(({ deployment, breaker, inFlight }) => {
      const s = breaker.snapshot();
      return {
        deployment: deployment.id,
        destination: deployment.destination,
        upstreamModel: deployment.upstreamModel,
        state: s.state,
        inFlight,
        consecutiveFailures: s.consecutiveFailures,
        windowCalls: s.windowCalls,
        windowFailures: s.windowFailures,
        retryAfterMs: s.retryAfterMs,
      };
    });
  }

  close(): void {
    for (const upstream of new Set(this.#upstreams.values())) upstream.close();
  }

  #slot(deployment: Deployment): Slot {
    const slot = this.#slots.get(deployment.id);
    if (slot === undefined) throw new RangeError(`unknown deployment ${deployment.id}`);
    return slot;
  }
}

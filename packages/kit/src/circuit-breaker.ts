/**
 * A circuit breaker: stop calling a dependency that keeps failing, so callers fail
 * fast instead of each paying a timeout, and the dependency gets room to recover.
 *
 *   closed ──(N consecutive failures, or failure rate ≥ x over the last W calls)──▶ open
 *   open ──(openDurationMs elapsed)──▶ half-open: up to maxProbes trial calls
 *   half-open ──(a probe succeeds)──▶ closed;  ──(a probe fails or times out)──▶ open
 *
 * Time comes from the injected Clock (monotonic), so every transition is testable
 * with a ManualClock. The breaker never blocks: asking while open costs nothing.
 *
 * @example
 * const breaker = new CircuitBreaker({ name: "smtp", clock, failureThreshold: 5, openDurationMs: 30_000 });
 * breaker.onStateChange((c) => log.warn(c, "breaker changed state"));
 * const sent = await breaker.run(() => smtp.send(message)); // rejects with BREAKER_OPEN when open
 */
import type { Clock } from "./clock.ts";
import type { CasebookError } from "./errors.ts";
import { kitErrors } from "./kit-errors.ts";

export type BreakerState = "closed" | "open" | "half-open";

/** Why the breaker changed state, for logs and metrics labels. */
export type BreakerTransitionReason =
  | "consecutive-failures"
  | "failure-rate"
  | "open-elapsed"
  | "probe-succeeded"
  | "probe-failed"
  | "probe-timed-out";

export interface BreakerStateChange {
  readonly name: string;
  readonly from: BreakerState;
  readonly to: BreakerState;
  readonly reason: BreakerTransitionReason;
  /** Wall-clock time of the change, from the injected Clock. */
  readonly atMs: number;
}

/** Opens the breaker on a failure rate over the last `windowCalls` calls. */
export interface FailureRateOptions {
  /** Size of the rolling window, in calls. */
  windowCalls: number;
  /** Fewest calls in the window before the rate may open the breaker (one failure in one call is not 100%). */
  minCalls: number;
  /** Failure fraction in (0, 1] at or above which the breaker opens. */
  threshold: number;
}

export interface CircuitBreakerOptions {
  /** Names the dependency in errors, logs and metrics. */
  name: string;
  clock: Clock;
  /** Consecutive failures (while closed) that open the breaker. */
  failureThreshold: number;
  /** Optionally also open on a failure rate, which catches a dependency failing every other call. */
  failureRate?: FailureRateOptions;
  /** How long the breaker stays open before letting probes through, in ms. */
  openDurationMs: number;
  /** Most probe calls in flight while half-open; default 1. */
  maxProbes?: number;
  /**
   * A probe with no reported outcome after this long counts as failed and re-opens
   * the breaker, so a lost probe cannot hold it half-open forever; default openDurationMs.
   */
  probeTimeoutMs?: number;
  /**
   * Which errors thrown inside `run` count against the dependency; default all.
   * Return false for the caller's own mistakes (a 4xx), which say nothing about its health.
   */
  isFailure?: (error: unknown) => boolean;
}

/** A counters snapshot for metrics. */
export interface BreakerSnapshot {
  readonly state: BreakerState;
  readonly consecutiveFailures: number;
  readonly windowCalls: number;
  readonly windowFailures: number;
  readonly probesInFlight: number;
  readonly retryAfterMs: number;
}

/** An admission ticket: the generation tells an outcome of an earlier state from a current one. */
interface Permit {
  readonly generation: number;
  readonly probeStartMs: number | undefined;
}

function requirePositiveInteger(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
}

function requirePositiveFinite(name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`${name} must be a positive finite number, got ${value}`);
}

function validate(options: CircuitBreakerOptions): void {
  if (options.name.trim() === "") throw new TypeError("a circuit breaker needs a name");
  requirePositiveInteger("failureThreshold", options.failureThreshold);
  requirePositiveFinite("openDurationMs", options.openDurationMs);
  if (options.maxProbes !== undefined) requirePositiveInteger("maxProbes", options.maxProbes);
  if (options.probeTimeoutMs !== undefined) requirePositiveFinite("probeTimeoutMs", options.probeTimeoutMs);
  const rate = options.failureRate;
  if (rate === undefined) return;
  requirePositiveInteger("failureRate.windowCalls", rate.windowCalls);
  requirePositiveInteger("failureRate.minCalls", rate.minCalls);
  if (rate.minCalls > rate.windowCalls) {
    throw new RangeError(
      `failureRate.minCalls (${rate.minCalls}) must be <= windowCalls (${rate.windowCalls})`,
    );
  }
  if (!(rate.threshold > 0 && rate.threshold <= 1)) {
    throw new RangeError(`failureRate.threshold must be in (0, 1], got ${rate.threshold}`);
  }
}

/**
 * Closed / open / half-open circuit breaker driven by an injected Clock.
 *
 * Two ways to use it: `run(fn)`, or by hand with `canRequest()` followed by exactly
 * one `onSuccess()` / `onFailure()` for every `true` (a half-open `true` holds a probe slot).
 *
 * @example
 * if (!breaker.canRequest()) return fallback();
 * try { const r = await call(); breaker.onSuccess(); return r; }
 * catch (e) { breaker.onFailure(); throw e; }
 */
export class CircuitBreaker {
  readonly name: string;
  readonly #clock: Clock;
  readonly #failureThreshold: number;
  readonly #rate: FailureRateOptions | undefined;
  readonly #openDurationMs: number;
  readonly #maxProbes: number;
  readonly #probeTimeoutMs: number;
  readonly #isFailure: (error: unknown) => boolean;
  readonly #listeners = new Set<(change: BreakerStateChange) => void>();

  #state: BreakerState = "closed";
  /** Bumped on every transition; outcomes of calls admitted in an older generation are ignored. */
  #generation = 0;
  #openedAtMs = 0;
  #consecutiveFailures = 0;
  /** Ring buffer of the last windowCalls outcomes, 1 = failure. */
  readonly #window: Uint8Array;
  #windowNext = 0;
  #windowCalls = 0;
  #windowFailures = 0;
  /** Start times (monotonic ms) of the probes in flight, oldest first; length <= maxProbes. */
  #probeStartsMs: number[] = [];

  constructor(options: CircuitBreakerOptions) {
    validate(options);
    this.name = options.name;
    this.#clock = options.clock;
    this.#failureThreshold = options.failureThreshold;
    this.#rate = options.failureRate;
    this.#openDurationMs = options.openDurationMs;
    this.#maxProbes = options.maxProbes ?? 1;
    this.#probeTimeoutMs = options.probeTimeoutMs ?? options.openDurationMs;
    this.#isFailure = options.isFailure ?? (() => true);
    this.#window = new Uint8Array(options.failureRate?.windowCalls ?? 0);
  }

  /** The current state (observing it applies any transition that time has made due). */
  get state(): BreakerState {
    this.#refresh();
    return this.#state;
  }

  /**
   * Whether a call may go ahead now. Never blocks: while open it answers false at
   * once, so callers skip the call instead of paying its timeout. While half-open a
   * `true` takes one of the maxProbes probe slots.
   */
  canRequest(): boolean {
    return this.#acquire() !== undefined;
  }

  /** Reports that an admitted call succeeded. */
  onSuccess(): void {
    this.#settle(false, undefined);
  }

  /** Reports that an admitted call failed. */
  onFailure(): void {
    this.#settle(true, undefined);
  }

  /**
   * Runs `fn` if the breaker admits it and records the outcome. When it does not,
   * rejects at once with BREAKER_OPEN (status 503, `fields.retryAfterMs`) without calling `fn`.
   *
   * @example
   * await breaker.run(() => fetchWithTimeout(url, { timeoutMs: 2_000 }));
   */
  async run<T>(fn: () => Promise<T> | T): Promise<T> {
    const permit = this.#acquire();
    if (permit === undefined) throw this.#openError();
    let result: T;
    try {
      result = await fn();
    } catch (error) {
      let failed = true;
      try {
        failed = this.#isFailure(error);
      } finally {
        this.#settle(failed, permit);
      }
      throw error;
    }
    this.#settle(false, permit);
    return result;
  }

  /** Milliseconds until a call may be admitted again (0 when one may be now). */
  retryAfterMs(): number {
    this.#refresh();
    const nowMs = this.#clock.monotonicMs();
    if (this.#state === "open") return Math.max(0, this.#openedAtMs + this.#openDurationMs - nowMs);
    if (this.#state === "half-open" && this.#probeStartsMs.length >= this.#maxProbes) {
      return Math.max(0, this.#probeStartsMs[0]! + this.#probeTimeoutMs - nowMs);
    }
    return 0;
  }

  /** Counters for metrics and health endpoints. */
  snapshot(): BreakerSnapshot {
    const retryAfterMs = this.retryAfterMs();
    return {
      state: this.#state,
      consecutiveFailures: this.#consecutiveFailures,
      windowCalls: this.#windowCalls,
      windowFailures: this.#windowFailures,
      probesInFlight: this.#probeStartsMs.length,
      retryAfterMs,
    };
  }

  /**
   * Calls `listener` synchronously after every state change; returns the unsubscribe
   * function. A listener that throws propagates to whichever call caused the change.
   */
  onStateChange(listener: (change: BreakerStateChange) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #acquire(): Permit | undefined {
    this.#refresh();
    if (this.#state === "closed") return { generation: this.#generation, probeStartMs: undefined };
    if (this.#state === "open" || this.#probeStartsMs.length >= this.#maxProbes) return undefined;
    const probeStartMs = this.#clock.monotonicMs();
    this.#probeStartsMs.push(probeStartMs);
    return { generation: this.#generation, probeStartMs };
  }

  /** Applies an outcome; `permit` is undefined for the by-hand onSuccess/onFailure API. */
  #settle(failed: boolean, permit: Permit | undefined): void {
    this.#refresh();
    // A call admitted before the last transition says nothing about the state now:
    // a slow success from before the breaker opened must not close it.
    if (permit !== undefined && permit.generation !== this.#generation) return;
    if (this.#state === "closed") {
      this.#recordClosedOutcome(failed);
    } else if (this.#state === "half-open" && this.#takeProbe(permit)) {
      this.#transition(failed ? "open" : "closed", failed ? "probe-failed" : "probe-succeeded");
    }
    // Open: the outcome of a call admitted before opening; the open timer decides.
  }

  /** Frees the probe slot of this outcome; false when no probe is in flight (a stale by-hand report). */
  #takeProbe(permit: Permit | undefined): boolean {
    if (this.#probeStartsMs.length === 0) return false;
    const index = permit?.probeStartMs === undefined ? 0 : this.#probeStartsMs.indexOf(permit.probeStartMs);
    this.#probeStartsMs.splice(Math.max(0, index), 1);
    return true;
  }

  #recordClosedOutcome(failed: boolean): void {
    this.#consecutiveFailures = failed ? this.#consecutiveFailures + 1 : 0;
    if (this.#rate !== undefined) this.#pushWindow(failed);
    if (this.#consecutiveFailures >= this.#failureThreshold) {
      this.#transition("open", "consecutive-failures");
    } else if (this.#rateExceeded()) {
      this.#transition("open", "failure-rate");
    }
  }

  #pushWindow(failed: boolean): void {
    const size = this.#window.length;
    if (this.#windowCalls === size) this.#windowFailures -= this.#window[this.#windowNext]!;
    else this.#windowCalls++;
    this.#window[this.#windowNext] = failed ? 1 : 0;
    this.#windowFailures += failed ? 1 : 0;
    this.#windowNext = (this.#windowNext + 1) % size;
  }

  #rateExceeded(): boolean {
    const rate = this.#rate;
    if (rate === undefined || this.#windowCalls < rate.minCalls) return false;
    return this.#windowFailures / this.#windowCalls >= rate.threshold;
  }

  /** Applies the transitions that elapsed time has made due; at most one per call. */
  #refresh(): void {
    const nowMs = this.#clock.monotonicMs();
    if (this.#state === "open" && nowMs - this.#openedAtMs >= this.#openDurationMs) {
      this.#transition("half-open", "open-elapsed");
    } else if (
      this.#state === "half-open" &&
      this.#probeStartsMs.length > 0 &&
      nowMs - this.#probeStartsMs[0]! >= this.#probeTimeoutMs
    ) {
      this.#transition("open", "probe-timed-out");
    }
  }

  #transition(to: BreakerState, reason: BreakerTransitionReason): void {
    const from = this.#state;
    this.#state = to;
    this.#generation++;
    this.#probeStartsMs = [];
    if (to === "open") this.#openedAtMs = this.#clock.monotonicMs();
    if (to === "closed") this.#resetCounters();
    const change: BreakerStateChange = { name: this.name, from, to, reason, atMs: this.#clock.nowMs() };
    for (const listener of [...this.#listeners]) listener(change);
  }

  #resetCounters(): void {
    this.#consecutiveFailures = 0;
    this.#window.fill(0);
    this.#windowNext = 0;
    this.#windowCalls = 0;
    this.#windowFailures = 0;
  }

  #openError(): CasebookError {
    const retryAfterMs = this.retryAfterMs();
    return kitErrors.create("BREAKER_OPEN", {
      detail: `The circuit breaker for ${this.name} is ${this.#state}; retry in ${retryAfterMs} ms.`,
      fields: { breaker: this.name, state: this.#state, retryAfterMs },
    });
  }
}

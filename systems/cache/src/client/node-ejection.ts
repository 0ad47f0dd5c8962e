/**
 * Dead-node ejection for ring mode, as memcached clients do it (libmemcached and
 * twemproxy's `auto_eject_hosts` + `server_failure_limit` + `server_retry_timeout`,
 * mcrouter's TKO): a node that failed `failureLimit` times in a row is taken out of
 * routing by THIS client, and after `retryAfterMs` one probe decides whether it comes
 * back. Without it a dead node's keys fail until an operator removes the node; with it
 * they move by themselves (seed 004 §1: "nós podem ser … removidos (escalonamento,
 * falhas) sem reiniciar os clientes" — CA-03).
 *
 * Pure bookkeeping: no I/O, no timers, time passed in. The router counts, asks, and acts
 * (takes the node off its ring, schedules the probe). Only link failures are counted —
 * a refused or timed-out connection, a link lost mid-command — never error replies: a
 * node that answers `-ERR` is alive, the error is the caller's. Any reply resets the count.
 *
 * Bounds: the router never ejects its last routable node (`ejectable: false` → "kept"),
 * and a node that keeps failing backs off: each failed probe doubles its wait, and so does
 * an ejection within `stableAfterMs` of its readmission (a flapping node), up to
 * `maxRetryAfterMs`; a node that stayed up `stableAfterMs` starts again at `retryAfterMs`.
 *
 * @example
 * const ejection = new NodeEjection({ failureLimit: 3, retryAfterMs: 1_000 });
 * ejection.recordFailure("10.0.0.7:7000", now, true); // { verdict: "counted", failures: 1 }
 * ejection.recordFailure("10.0.0.7:7000", now, true); // { verdict: "counted", failures: 2 }
 * ejection.recordFailure("10.0.0.7:7000", now, true); // { verdict: "eject", failures: 3, retryAfterMs: 1_000 }
 * ejection.probeFailed("10.0.0.7:7000");              // 2_000: the next probe waits twice as long
 * ejection.readmit("10.0.0.7:7000", later);
 */
import { backoffDelayMs } from "@casebook/kit/backoff";
import { requireClientInteger } from "./client-errors.ts";

export interface EjectionOptions {
  /** Consecutive link failures (connect refused/timed out, link lost, reply timeout) that eject a node. Default 3. */
  readonly failureLimit?: number;
  /** Wait before the first probe of an ejected node. Default 3,000 ms. */
  readonly retryAfterMs?: number;
  /** Cap of that wait as it doubles for a node that keeps failing. Default 60,000 ms. */
  readonly maxRetryAfterMs?: number;
  /** A readmitted node that stays up this long is no longer counted as flapping. Default maxRetryAfterMs. */
  readonly stableAfterMs?: number;
}

export const ejectionDefaults: Readonly<Required<Omit<EjectionOptions, "stableAfterMs">>> = Object.freeze({
  failureLimit: 3,
  retryAfterMs: 3_000,
  maxRetryAfterMs: 60_000,
});

/** What one more failure did: counted it, ejected the node, or kept it (it is the last one routable). */
export type FailureDecision =
  | { readonly verdict: "counted"; readonly failures: number }
  | { readonly verdict: "eject"; readonly failures: number; readonly retryAfterMs: number }
  | { readonly verdict: "kept"; readonly failures: number };

interface NodeHealth {
  failures: number;
  ejected: boolean;
  /** Ejections and failed probes without a stable period between them: the backoff exponent. */
  streak: number;
  /** When a probe last readmitted it (-Infinity: never). */
  readmittedAtMs: number;
}

/** Bound on the ms arguments: a day. */
const MAX_WAIT_MS = 86_400_000;

export class NodeEjection {
  readonly failureLimit: number;
  readonly retryAfterMs: number;
  readonly maxRetryAfterMs: number;
  readonly stableAfterMs: number;
  readonly #nodes = new Map<string, NodeHealth>();

  constructor(options: EjectionOptions = {}) {
    this.failureLimit = options.failureLimit ?? ejectionDefaults.failureLimit;
    this.retryAfterMs = options.retryAfterMs ?? ejectionDefaults.retryAfterMs;
    this.maxRetryAfterMs =
      options.maxRetryAfterMs ?? Math.max(ejectionDefaults.maxRetryAfterMs, this.retryAfterMs);
    this.stableAfterMs = options.stableAfterMs ?? this.maxRetryAfterMs;
    requireClientInteger("ejection.failureLimit", this.failureLimit, 1, 1_000);
    requireClientInteger("ejection.retryAfterMs", this.retryAfterMs, 1, MAX_WAIT_MS);
    requireClientInteger("ejection.maxRetryAfterMs", this.maxRetryAfterMs, this.retryAfterMs, MAX_WAIT_MS);
    requireClientInteger("ejection.stableAfterMs", this.stableAfterMs, 0, MAX_WAIT_MS);
  }

  isEjected(address: string): boolean {
    return this.#nodes.get(address)?.ejected === true;
  }

  /** Consecutive failures counted for `address` now. */
  failures(address: string): number {
    return this.#nodes.get(address)?.failures ?? 0;
  }

  /** A reply came back: the node is alive, its count starts over. Ignored while ejected (only a probe readmits). */
  recordSuccess(address: string): void {
    const health = this.#nodes.get(address);
    if (health !== undefined && !health.ejected) health.failures = 0;
  }

  /**
   * One more link failure of `address` at `nowMs`. `ejectable` is false when taking it out
   * would leave the router no node to route to; past the limit it is then "kept".
   */
  recordFailure(address: string, nowMs: number, ejectable: boolean): FailureDecision {
    const health = this.#health(address);
    if (health.ejected) return { verdict: "counted", failures: health.failures };
    health.failures += 1;
    if (health.failures < this.failureLimit) return { verdict: "counted", failures: health.failures };
    if (!ejectable) return { verdict: "kept", failures: health.failures };
    const flapping = nowMs - health.readmittedAtMs < this.stableAfterMs;
    health.streak = flapping ? health.streak + 1 : 1;
    health.ejected = true;
    return { verdict: "eject", failures: health.failures, retryAfterMs: this.#waitMs(health.streak) };
  }

  /** The probe failed: the wait before the next one, doubled (capped). */
  probeFailed(address: string): number {
    const health = this.#health(address);
    health.streak += 1;
    return this.#waitMs(health.streak);
  }

  /** The probe answered: the node routes again, its count starts over; its streak fades after stableAfterMs. */
  readmit(address: string, nowMs: number): void {
    const health = this.#health(address);
    health.ejected = false;
    health.failures = 0;
    health.readmittedAtMs = nowMs;
  }

  /** The node left the ring: nothing is kept about it. */
  forget(address: string): void {
    this.#nodes.delete(address);
  }

  #health(address: string): NodeHealth {
    let health = this.#nodes.get(address);
    if (health === undefined) {
      health = { failures: 0, ejected: false, streak: 0, readmittedAtMs: Number.NEGATIVE_INFINITY };
      this.#nodes.set(address, health);
    }
    return health;
  }

  #waitMs(streak: number): number {
    return backoffDelayMs(Math.max(1, streak), this.retryAfterMs, this.maxRetryAfterMs);
  }
}

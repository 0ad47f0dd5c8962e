/**
 * The simulator's knobs: the generic fault knobs of infra's simulator base
 * (`@casebook/infra/http/simulator-faults`), under the names the acquirer's admin API
 * has always used (`timeoutAfterChargeRate`, `timeoutMode`: a lost response here is a
 * charge whose answer never arrives, PY-06), and the acquirer's own (declines, a rate
 * limit per merchant, the fee). The draw is the base's `planFaults`: a seeded run is
 * reproducible, and a random number is drawn only for a knob that is on.
 *
 * @example
 * const behaviour = mergeBehaviour(defaultBehaviour, { errorRate: 0.1, latencyMs: 20 });
 * planCall(behaviour, seededRandom(7), { mutating: true }); // { delayMs: 20, fault: "none" }
 */
import {
  type CallPlan,
  checkBounds,
  defaultFaultKnobs,
  type FaultKnobs,
  faultKnobBounds,
  type LostResponseMode,
  type OutageMode,
  planFaults,
} from "@casebook/infra/http/simulator-faults";
import type { RandomSource } from "@casebook/kit/random";

export type { CallFault, CallPlan, ErrorStatus } from "@casebook/infra/http/simulator-faults";
export { ERROR_STATUSES } from "@casebook/infra/http/simulator-faults";
export type TimeoutMode = LostResponseMode;
export type { OutageMode };

export interface Behaviour {
  /** Added to every /v1 call before it is processed. */
  readonly latencyMs: number;
  /** Up to this much more, uniform. */
  readonly latencyJitterMs: number;
  /** Probability a NEW authorization is declined. */
  readonly declineRate: number;
  /** Probability a /v1 call fails with 500/502/503 BEFORE doing anything (not charged). */
  readonly errorRate: number;
  /** Probability a mutating call is DONE (charged, captured, refunded) but its response never arrives. */
  readonly timeoutAfterChargeRate: number;
  /** hang: hold the socket `hangMs` then cut it; reset: cut it at once. */
  readonly timeoutMode: TimeoutMode;
  /** How long a hung response holds its socket: longer than any sane client timeout. */
  readonly hangMs: number;
  /** While true every /v1 call is refused (503) or its connection reset, per `outageMode`. */
  readonly outage: boolean;
  readonly outageMode: OutageMode;
  /** Authorization calls per merchant per second; 0 = unlimited. */
  readonly merchantRatePerS: number;
  /** The acquirer's fee on captures in basis points, reported in the settlement file. */
  readonly feeBps: number;
}

export const defaultBehaviour: Behaviour = Object.freeze({
  latencyMs: defaultFaultKnobs.latencyMs,
  latencyJitterMs: defaultFaultKnobs.latencyJitterMs,
  declineRate: 0,
  errorRate: defaultFaultKnobs.errorRate,
  timeoutAfterChargeRate: defaultFaultKnobs.lostResponseRate,
  timeoutMode: defaultFaultKnobs.lostResponseMode,
  hangMs: defaultFaultKnobs.hangMs,
  outage: defaultFaultKnobs.outage,
  outageMode: defaultFaultKnobs.outageMode,
  merchantRatePerS: 0,
  feeBps: 150,
});

/** Bounds of each numeric knob, shared by the JSON schema and `mergeBehaviour`. */
export const behaviourBounds = {
  latencyMs: faultKnobBounds.latencyMs,
  latencyJitterMs: faultKnobBounds.latencyJitterMs,
  declineRate: { min: 0, max: 1 },
  errorRate: faultKnobBounds.errorRate,
  timeoutAfterChargeRate: faultKnobBounds.lostResponseRate,
  hangMs: faultKnobBounds.hangMs,
  merchantRatePerS: { min: 0, max: 1_000_000 },
  feeBps: { min: 0, max: 10_000 },
} as const;

/** `current` with the knobs of `patch` replaced; throws RangeError naming a knob out of bounds. */
export function mergeBehaviour(current: Behaviour, patch: Partial<Behaviour>): Behaviour {
  const next: Behaviour = { ...current, ...patch };
  checkBounds(next, behaviourBounds);
  return Object.freeze(next);
}

/** The base's fault knobs under the acquirer's names. */
export function faultKnobsOf(behaviour: Behaviour): FaultKnobs {
  return {
    latencyMs: behaviour.latencyMs,
    latencyJitterMs: behaviour.latencyJitterMs,
    errorRate: behaviour.errorRate,
    lostResponseRate: behaviour.timeoutAfterChargeRate,
    lostResponseMode: behaviour.timeoutMode,
    hangMs: behaviour.hangMs,
    outage: behaviour.outage,
    outageMode: behaviour.outageMode,
  };
}

/**
 * What happens to one call: refused by an outage (decided first, without latency:
 * a down acquirer answers or resets fast), otherwise delayed, then failed before
 * processing, or processed with its response lost (`lost-response`, mutating calls only).
 */
export function planCall(behaviour: Behaviour, rng: RandomSource, options: { mutating: boolean }): CallPlan {
  return planFaults(faultKnobsOf(behaviour), rng, options);
}

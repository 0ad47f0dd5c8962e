/**
 * The simulator's failure knobs and the pure decision of what happens to one call.
 * The HTTP layer (acquirer-faults.ts) carries the decision out; keeping the draw
 * here makes a seeded run reproducible: the same seed and the same calls give the
 * same delays, errors and lost responses.
 *
 * A random number is drawn only for a knob that is on, so turning one knob on does
 * not shift the sequence another knob sees.
 *
 * @example
 * const behaviour = mergeBehaviour(defaultBehaviour, { errorRate: 0.1, latencyMs: 20 });
 * planCall(behaviour, seededRandom(7), { mutating: true }); // { delayMs: 20, fault: "none" }
 */
import { int, pick, type RandomSource } from "@casebook/kit/random";

export type TimeoutMode = "hang" | "reset";
export type OutageMode = "refuse" | "reset";

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
  latencyMs: 0,
  latencyJitterMs: 0,
  declineRate: 0,
  errorRate: 0,
  timeoutAfterChargeRate: 0,
  timeoutMode: "hang",
  hangMs: 60_000,
  outage: false,
  outageMode: "refuse",
  merchantRatePerS: 0,
  feeBps: 150,
});

/** Bounds of each numeric knob, shared by the JSON schema and `mergeBehaviour`. */
export const behaviourBounds = {
  latencyMs: { min: 0, max: 60_000 },
  latencyJitterMs: { min: 0, max: 60_000 },
  declineRate: { min: 0, max: 1 },
  errorRate: { min: 0, max: 1 },
  timeoutAfterChargeRate: { min: 0, max: 1 },
  hangMs: { min: 1, max: 600_000 },
  merchantRatePerS: { min: 0, max: 1_000_000 },
  feeBps: { min: 0, max: 10_000 },
} as const;

export type ErrorStatus = 500 | 502 | 503;
export const ERROR_STATUSES: readonly ErrorStatus[] = [500, 502, 503];

export type CallFault =
  | { readonly kind: "none" }
  | { readonly kind: "outage"; readonly mode: OutageMode }
  | { readonly kind: "error"; readonly status: ErrorStatus }
  | { readonly kind: "timeout-after-charge"; readonly mode: TimeoutMode; readonly hangMs: number };

export interface CallPlan {
  readonly delayMs: number;
  readonly fault: CallFault;
}

/** `current` with the knobs of `patch` replaced; throws RangeError naming a knob out of bounds. */
export function mergeBehaviour(current: Behaviour, patch: Partial<Behaviour>): Behaviour {
  const next: Behaviour = { ...current, ...patch };
  for (const [knob, { min, max }] of Object.entries(behaviourBounds)) {
    const value = next[knob as keyof typeof behaviourBounds];
    if (!(Number.isFinite(value) && value >= min && value <= max)) {
      throw new RangeError(`${knob} must be a number in [${min}, ${max}], got ${value}`);
    }
  }
  return Object.freeze(next);
}

/**
 * What happens to one call: refused by an outage (decided first, without latency:
 * a down acquirer answers or resets fast), otherwise delayed, then failed before
 * processing, or processed with its response lost (mutating calls only).
 */
export function planCall(behaviour: Behaviour, rng: RandomSource, options: { mutating: boolean }): CallPlan {
  if (behaviour.outage) return { delayMs: 0, fault: { kind: "outage", mode: behaviour.outageMode } };
  const delayMs =
    behaviour.latencyMs + (behaviour.latencyJitterMs > 0 ? int(rng, behaviour.latencyJitterMs + 1) : 0);
  if (behaviour.errorRate > 0 && rng.next() < behaviour.errorRate) {
    return { delayMs, fault: { kind: "error", status: pick(rng, ERROR_STATUSES) } };
  }
  if (
    options.mutating &&
    behaviour.timeoutAfterChargeRate > 0 &&
    rng.next() < behaviour.timeoutAfterChargeRate
  ) {
    return {
      delayMs,
      fault: { kind: "timeout-after-charge", mode: behaviour.timeoutMode, hangMs: behaviour.hangMs },
    };
  }
  return { delayMs, fault: { kind: "none" } };
}

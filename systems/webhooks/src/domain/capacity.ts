/**
 * The text's back-of-the-envelope arithmetic (seed 003, "Modelo de capacidade" and
 * "Backlog e aritmética de recuperação"), as functions a test checks and a bench feeds
 * with measured numbers. They are fluid approximations, not tail-latency guarantees:
 * destination quotas, tenant skew and retries break them easily, which is why the
 * retry budget and the fair scheduler exist.
 *
 * @example
 * const load = deliveryLoad({ eventsPerDay: 200_000, subscriptionsPerEvent: 3, peakFactor: 50 });
 * load.tasksPerS;                                   // ≈ 6.94
 * workersFor({ attemptsPerS: load.peakTasksPerS, attemptsPerWorkerPerS: 60 }); // { cover: 6, withSpare: 7 }
 * drain({ arrivalPerS: 350, outageS: 900, processingPerS: 500 });              // { backlog: 315_000, drainS: 2_100 }
 */
import { deliveryErrors } from "../errors.ts";

const SECONDS_PER_DAY = 86_400;
const BYTES_PER_KIB = 1_024;

function invalid(field: string, reason: string): Error {
  return deliveryErrors.create("WEBHOOK_CAPACITY_INVALID", { fields: { field, reason } });
}

function requireNonNegative(field: string, value: number): void {
  if (!Number.isFinite(value) || value < 0)
    throw invalid(field, `must be a finite number >= 0, got ${value}`);
}

function requirePositive(field: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0)
    throw invalid(field, `must be a finite number > 0, got ${value}`);
}

export interface DeliveryLoadInput {
  eventsPerDay: number;
  /** Active subscriptions per event on average: each one is a delivery task. */
  subscriptionsPerEvent: number;
  /** Peak over the daily mean, before retries. */
  peakFactor: number;
}

export interface DeliveryLoad {
  tasksPerDay: number;
  tasksPerS: number;
  peakTasksPerS: number;
}

/** Tasks a day, their mean rate and the peak rate (WH-05: 600k/day ≈ 6.94/s, peak ≈ 347.2/s). */
export function deliveryLoad(input: DeliveryLoadInput): DeliveryLoad {
  requireNonNegative("eventsPerDay", input.eventsPerDay);
  requireNonNegative("subscriptionsPerEvent", input.subscriptionsPerEvent);
  requirePositive("peakFactor", input.peakFactor);
  const tasksPerDay = input.eventsPerDay * input.subscriptionsPerEvent;
  const tasksPerS = tasksPerDay / SECONDS_PER_DAY;
  return { tasksPerDay, tasksPerS, peakTasksPerS: tasksPerS * input.peakFactor };
}

/**
 * Workers that cover `attemptsPerS` under an ideal split, and one spare for N+1 (WH-05).
 *
 * @example
 * workersFor({ attemptsPerS: 347.2, attemptsPerWorkerPerS: 60 }); // { cover: 6, withSpare: 7 }
 */
export function workersFor(input: { attemptsPerS: number; attemptsPerWorkerPerS: number }): {
  cover: number;
  withSpare: number;
} {
  requireNonNegative("attemptsPerS", input.attemptsPerS);
  requirePositive("attemptsPerWorkerPerS", input.attemptsPerWorkerPerS);
  const cover = Math.ceil(input.attemptsPerS / input.attemptsPerWorkerPerS);
  return { cover, withSpare: cover + 1 };
}

/**
 * Payload bytes per second, before HTTP and TLS overhead (WH-06: 2 KiB × 350/s = 700 KiB/s).
 *
 * @example
 * payloadBytesPerS({ bodyBytes: 2 * 1024, attemptsPerS: 350 }) / 1024; // 700
 */
export function payloadBytesPerS(input: { bodyBytes: number; attemptsPerS: number }): number {
  requireNonNegative("bodyBytes", input.bodyBytes);
  requireNonNegative("attemptsPerS", input.attemptsPerS);
  return input.bodyBytes * input.attemptsPerS;
}

/** KiB in `bytes`, for reading `payloadBytesPerS` the way the text states it. */
export function kib(bytes: number): number {
  return bytes / BYTES_PER_KIB;
}

export interface DrainInput {
  /** Tasks arriving per second, during the outage and after it. */
  arrivalPerS: number;
  outageS: number;
  /** Healthy dispatch rate after recovery. */
  processingPerS: number;
}

/**
 * The backlog an outage leaves and the seconds to drain it while arrivals continue
 * (WH-19): backlog = arrival × outage; drain = ceil(backlog / (processing − arrival)).
 * Processing at or below arrival never drains: that is an error, not Infinity.
 *
 * @example
 * drain({ arrivalPerS: 350, outageS: 900, processingPerS: 400 }); // { backlog: 315_000, drainS: 6_300 }
 */
export function drain(input: DrainInput): { backlog: number; drainS: number } {
  requireNonNegative("arrivalPerS", input.arrivalPerS);
  requireNonNegative("outageS", input.outageS);
  requireNonNegative("processingPerS", input.processingPerS);
  const marginPerS = input.processingPerS - input.arrivalPerS;
  if (marginPerS <= 0) {
    throw invalid(
      "processingPerS",
      `must exceed arrivalPerS (${input.arrivalPerS}) or the backlog never drains`,
    );
  }
  const backlog = input.arrivalPerS * input.outageS;
  return { backlog, drainS: Math.ceil(backlog / marginPerS) };
}

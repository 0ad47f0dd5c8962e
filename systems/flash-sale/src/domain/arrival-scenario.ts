/**
 * FS-16 as a model: the same arrival curve — a burst far above checkout's capacity, decaying —
 * with and without the waiting room, one step per second, deterministic on an injected random
 * source. The client retry model is stated, not guessed: a request checkout cannot serve
 * within the second times out after `timeoutS`, and its client tries again after a jittered
 * exponential backoff (full jitter, base `backoffBaseS`, at most `retriesMax` retries, then it
 * gives up). This is the behaviour of a browser or app hammering a slow checkout.
 *
 * - without the room, checkout is offered new arrivals + retries; it serves `capacityPerS`,
 *   every other request fails and comes back: the retries raise the peak and stretch a burst
 *   of seconds into a long overload (§8: "a one-second failure becomes minutes");
 * - with the room, arrivals join the line (one cheap request each) and checkout gets the
 *   line's head at `capacityPerS`: never more than it takes, nobody retries, everyone is
 *   served in order — the cost is the wait, which FS-20 shows on the page.
 *
 * It models the flows, not the service; the service's own limits are proven by FS-13's and
 * FS-15's tests. `scenario(...)` with the defaults is the README's table and plot.
 *
 * @example
 * const r = arrivalScenario({ capacityPerS: 300, peakFactor: 20, decayS: 3, durationS: 120 }, seededRandom(16));
 * r.without.peakOfferedPerS > r.arrivals.peakPerS; // retries amplify the peak
 * r.withRoom.peakOfferedPerS <= 300;                // checkout held at capacity
 */
import type { RandomSource } from "@casebook/kit/random";

export interface ScenarioConfig {
  /** Requests checkout serves per second. */
  readonly capacityPerS: number;
  /** The first second's arrivals, as a multiple of capacity (FS-16: 20×). */
  readonly peakFactor: number;
  /** Arrivals decay as peak · e^(−t / decayS). */
  readonly decayS: number;
  /** Seconds simulated (bounded: the series is one value per second). */
  readonly durationS: number;
  /** Client retry model (stated): timeout, then full-jitter backoff, bounded retries. */
  readonly timeoutS?: number;
  readonly backoffBaseS?: number;
  readonly retriesMax?: number;
}

export interface Side {
  /** Requests offered to checkout in each second. */
  readonly offeredPerS: number[];
  readonly servedPerS: number[];
  readonly peakOfferedPerS: number;
  /** Seconds in which checkout was offered more than it takes. */
  readonly overloadedS: number;
  /** Last second checkout was offered more than it takes (0 when never). */
  readonly overloadEndsS: number;
  readonly served: number;
  /** Clients that gave up after their last retry (without the room). */
  readonly gaveUp: number;
  /** Largest line in the room (with it). */
  readonly maxQueue: number;
}

export interface ScenarioResult {
  readonly arrivals: { perS: number[]; peakPerS: number; total: number; aboveCapacityS: number };
  readonly without: Side;
  readonly withRoom: Side;
}

const DURATION_MAX_S = 3_600;

export function arrivalScenario(config: ScenarioConfig, random: RandomSource): ScenarioResult {
  const { capacityPerS: cap, peakFactor, decayS, durationS } = config;
  const timeoutS = config.timeoutS ?? 2;
  const baseS = config.backoffBaseS ?? 1;
  const retriesMax = config.retriesMax ?? 6;
  if (!(cap >= 1 && peakFactor > 0 && decayS > 0 && durationS >= 1 && durationS <= DURATION_MAX_S)) {
    throw new RangeError(
      `capacityPerS >= 1, peakFactor > 0, decayS > 0, durationS in [1, ${DURATION_MAX_S}]`,
    );
  }
  const arrivals = Array.from({ length: durationS }, (_, t) =>
    Math.round(cap * peakFactor * Math.exp(-t / decayS)),
  );

  // Without the room: retries[t][k] = clients coming back at second t on their k-th retry.
  const retries: number[][] = Array.from({ length: durationS }, () => new Array(retriesMax + 1).fill(0));
  const offered: number[] = [];
  const served: number[] = [];
  let gaveUp = 0;
  for (let t = 0; t < durationS; t++) {
    const byTry = [arrivals[t]!, ...retries[t]!.slice(1)];
    const total = byTry.reduce((a, b) => a + b, 0);
    const serve = Math.min(cap, total);
    offered.push(total);
    served.push(serve);
    // The served are a uniform sample of the offered; each failed client schedules its next try.
    const failRate = total === 0 ? 0 : (total - serve) / total;
    byTry.forEach((n, k) => {
      const failed = Math.round(n * failRate);
      if (k >= retriesMax) {
        gaveUp += failed;
        return;
      }
      for (let i = 0; i < failed; i++) {
        const backoffS = random.next() * baseS * 2 ** k;
        const at = t + timeoutS + Math.floor(backoffS);
        if (at < durationS) retries[at]![k + 1]! += 1;
      }
    });
  }

  // With the room: the line's head goes to checkout at capacity; nobody times out.
  const roomOffered: number[] = [];
  let queue = 0;
  let maxQueue = 0;
  for (let t = 0; t < durationS; t++) {
    queue += arrivals[t]!;
    maxQueue = Math.max(maxQueue, queue);
    const admit = Math.min(cap, queue);
    queue -= admit;
    roomOffered.push(admit);
  }
  const side = (off: number[], srv: number[], extra: { gaveUp: number; maxQueue: number }): Side => {
    const over = off.map((o, t) => (o > cap ? t : -1)).filter((t) => t >= 0);
    return {
      offeredPerS: off,
      servedPerS: srv,
      peakOfferedPerS: Math.max(...off),
      overloadedS: over.length,
      overloadEndsS: over.length === 0 ? 0 : over.at(-1)! + 1,
      served: srv.reduce((a, b) => a + b, 0),
      ...extra,
    };
  };
  return {
    arrivals: {
      perS: arrivals,
      peakPerS: Math.max(...arrivals),
      total: arrivals.reduce((a, b) => a + b, 0),
      aboveCapacityS: arrivals.filter((a) => a > cap).length,
    },
    without: side(offered, served, { gaveUp, maxQueue: 0 }),
    withRoom: side(roomOffered, roomOffered, { gaveUp: 0, maxQueue }),
  };
}

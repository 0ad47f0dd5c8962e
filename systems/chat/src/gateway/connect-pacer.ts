/**
 * The gateway's admission of new sockets (CH-13: 500 new connections per second), paced
 * rather than only refused — nginx `limit_req`'s burst with delay, on the generic cell rate
 * algorithm: a burst of `burst` upgrades goes at once, the next ones are given a slot one
 * interval (1 s / rate) apart and wait for it, and an upgrade whose slot is more than
 * `maxWaitMs` away is refused (503) at once. The rate holds either way: over any window of t
 * seconds at most burst + rate·t upgrades are admitted.
 *
 * Why wait instead of refusing: after a gateway dies, its clients come back all at once. A
 * refusal sends each of them into its client's backoff, whose pauses double (a browser's
 * WebSocket cannot read a Retry-After on a failed upgrade), so the last of 1,000 clients was
 * back 4–10 s after the restart where the admission rate alone needs 1 s. A short wait for a
 * slot turns that into the rate's own time; `maxWaitMs` bounds how many sockets wait (rate ·
 * maxWaitMs) and how long a client hangs before it hears "try elsewhere".
 *
 * Pure: time comes from the caller.
 *
 * @example
 * const pacer = new ConnectPacer({ ratePerS: 500, burst: 500, maxWaitMs: 2_000 });
 * const waitMs = pacer.reserve(clock.monotonicMs()); // 0: admit now; > 0: admit after it; undefined: 503
 */
export interface ConnectPacerOptions {
  readonly ratePerS: number;
  /** Upgrades admitted back to back (the token bucket's capacity). */
  readonly burst: number;
  /** The longest wait for a slot; 0 refuses past the burst at once. */
  readonly maxWaitMs: number;
}

/**
 * Below this a wait is rounding: an interval of 1000/3 ms added twice is not exactly the burst
 * window of 2 × 1000/3, and the burst's last slot came out 1e-13 ms away — refused at a maxWaitMs of 0.
 */
const ROUNDING_MS = 1e-6;

export class ConnectPacer {
  readonly #intervalMs: number;
  readonly #burstWindowMs: number;
  readonly #maxWaitMs: number;
  /** Theoretical arrival time of the next upgrade (GCRA's TAT). */
  #tatMs = Number.NEGATIVE_INFINITY;

  constructor(options: ConnectPacerOptions) {
    if (!(options.ratePerS > 0) || !Number.isFinite(options.ratePerS))
      throw new RangeError(`ratePerS must be a finite number > 0, got ${options.ratePerS}`);
    if (!(options.burst >= 1)) throw new RangeError(`burst must be >= 1, got ${options.burst}`);
    if (!(options.maxWaitMs >= 0)) throw new RangeError(`maxWaitMs must be >= 0, got ${options.maxWaitMs}`);
    this.#intervalMs = 1_000 / options.ratePerS;
    this.#burstWindowMs = (options.burst - 1) * this.#intervalMs;
    this.#maxWaitMs = options.maxWaitMs;
  }

  /** Reserves the next slot: the ms to wait before admitting (0 = now), or undefined when refused. */
  reserve(nowMs: number): number | undefined {
    const tatMs = Math.max(this.#tatMs, nowMs);
    const waitMs = tatMs - this.#burstWindowMs - nowMs;
    if (waitMs > this.#maxWaitMs + ROUNDING_MS) return undefined;
    this.#tatMs = tatMs + this.#intervalMs;
    return waitMs > ROUNDING_MS ? waitMs : 0;
  }
}

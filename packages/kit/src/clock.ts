/**
 * Time as an injected dependency, so domain code is deterministic in tests.
 *
 * @example
 * const clock = new ManualClock(1_000);
 * clock.advance(250);
 * clock.nowMs(); // 1250
 */
export interface Clock {
  /** Wall-clock milliseconds since the Unix epoch. */
  nowMs(): number;
  /** Monotonic milliseconds, for measuring intervals; never goes back. */
  monotonicMs(): number;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
};

/** A clock that moves only when told to: for tests and simulations. */
export class ManualClock implements Clock {
  #nowMs: number;
  #monoMs = 0;

  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  nowMs(): number {
    return this.#nowMs;
  }

  monotonicMs(): number {
    return this.#monoMs;
  }

  /** Moves both clocks forward; a negative step is a bug in the test. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance(ms) needs ms >= 0, got ${ms}`);
    this.#nowMs += ms;
    this.#monoMs += ms;
  }

  /** Sets wall-clock time only (it may jump back, as NTP can); monotonic time is untouched. */
  setWallMs(ms: number): void {
    this.#nowMs = ms;
  }
}

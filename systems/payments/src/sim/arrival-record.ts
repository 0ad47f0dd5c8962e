/**
 * The acquirer's own record of arrivals per second: every call to its /v1 API counted when it
 * arrives (before any injected latency or error), under the whole second of the simulator's
 * clock it arrived in and its operation (`POST /v1/authorizations`, …). A caller that promises
 * to send at most R charges a second (flash-sale's charge queue, FS-15) is checked here, on
 * the processor's side of the wire. Calls a simulated outage refuses are not arrivals (the
 * fault counters count them). Bounded: the newest `maxSeconds` seconds are kept.
 *
 * @example
 * const arrivals = new ArrivalRecord({ maxSeconds: 3_600 });
 * arrivals.record("POST /v1/authorizations", clock.nowMs());
 * arrivals.seconds(); // [{ second: 1792670400, total: 1, operations: { "POST /v1/authorizations": 1 } }]
 */

export interface ArrivalSecond {
  /** Unix time of the second's start, in whole seconds. */
  readonly second: number;
  readonly total: number;
  readonly operations: Readonly<Record<string, number>>;
}

export const DEFAULT_ARRIVAL_SECONDS = 3_600;

export class ArrivalRecord {
  readonly #maxSeconds: number;
  #bySecond = new Map<number, { total: number; operations: Map<string, number> }>();

  constructor(options: { maxSeconds?: number } = {}) {
    this.#maxSeconds = options.maxSeconds ?? DEFAULT_ARRIVAL_SECONDS;
    if (!Number.isSafeInteger(this.#maxSeconds) || this.#maxSeconds < 1) {
      throw new RangeError("maxSeconds must be a positive integer");
    }
  }

  record(operation: string, nowMs: number): void {
    const second = Math.floor(nowMs / 1_000);
    let slot = this.#bySecond.get(second);
    if (slot === undefined) {
      slot = { total: 0, operations: new Map() };
      this.#bySecond.set(second, slot);
      while (this.#bySecond.size > this.#maxSeconds) {
        const oldest = Math.min(...this.#bySecond.keys());
        this.#bySecond.delete(oldest);
      }
    }
    slot.total += 1;
    slot.operations.set(operation, (slot.operations.get(operation) ?? 0) + 1);
  }

  /** Every second with at least one arrival, oldest first. */
  seconds(): ArrivalSecond[] {
    return [...this.#bySecond.entries()]
      .sort(([a], [b]) => a - b)
      .map(([second, slot]) => ({
        second,
        total: slot.total,
        operations: Object.fromEntries(slot.operations),
      }));
  }

  reset(): void {
    this.#bySecond = new Map();
  }
}

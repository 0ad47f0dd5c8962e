/**
 * Duplicate call suppression, after Go's `golang.org/x/sync/singleflight`: while one call
 * for a key is in flight, every other caller asking for the same key waits for that call
 * instead of starting its own. A process serving 100 concurrent misses of one key then
 * sends one query, not 100 (the cache's request coalescing, CA-20).
 *
 * - Failure is shared like success: if the call rejects, every waiter gets that same
 *   rejection, and the next caller starts afresh (a failed call is never remembered).
 * - `forget(key)` makes the next caller start a new call even while one is in flight
 *   (Go's `Forget`): for when the in-flight answer is known to be stale (the key was just
 *   written). The callers already waiting still get the old call's answer.
 * - Bounded by `maxInFlightKeys`: past it a new key runs its work uncoalesced rather than
 *   growing the map (a flood of distinct keys cannot grow memory; it just loses the
 *   coalescing it could not have had anyway).
 *
 * The work always starts in a later microtask, so a `work` that throws synchronously
 * rejects the returned promise like one that rejects.
 *
 * @example
 * const flights = new SingleFlight<string>({ maxInFlightKeys: 10_000 });
 * const [a, b] = await Promise.all([
 *   flights.do("event:42", () => db.load(42)),
 *   flights.do("event:42", () => db.load(42)), // joins the first: one db.load
 * ]);
 */
import { assert } from "./assert.ts";

export interface SingleFlightOptions {
  /** Keys with a call in flight at once; past it new keys run uncoalesced. */
  readonly maxInFlightKeys: number;
}

export interface SingleFlightStats {
  /** Calls started (one per coalesced group). */
  readonly started: number;
  /** Callers that joined a call in flight instead of starting one. */
  readonly joined: number;
  /** Calls run uncoalesced because `maxInFlightKeys` keys were in flight. */
  readonly overflowed: number;
}

/** Upper bound on `maxInFlightKeys`: a map that large is a configuration mistake. */
export const MAX_IN_FLIGHT_KEYS = 10_000_000;

export class SingleFlight<T> {
  readonly #inFlight = new Map<string, Promise<T>>();
  readonly #maxInFlightKeys: number;
  #started = 0;
  #joined = 0;
  #overflowed = 0;

  constructor(options: SingleFlightOptions) {
    const max = options.maxInFlightKeys;
    if (!(Number.isInteger(max) && max >= 1 && max <= MAX_IN_FLIGHT_KEYS)) {
      throw new RangeError(`maxInFlightKeys must be an integer in [1, ${MAX_IN_FLIGHT_KEYS}], got ${max}`);
    }
    this.#maxInFlightKeys = max;
  }

  /** Keys with a call in flight. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  get stats(): SingleFlightStats {
    return { started: this.#started, joined: this.#joined, overflowed: this.#overflowed };
  }

  /** The in-flight call of `key`, or a new one of `work`; every caller gets its settlement. */
  do(key: string, work: () => Promise<T>): Promise<T> {
    const existing = this.#inFlight.get(key);
    if (existing !== undefined) {
      this.#joined += 1;
      return existing;
    }
    if (this.#inFlight.size >= this.#maxInFlightKeys) {
      this.#overflowed += 1;
      return Promise.resolve().then(work);
    }
    this.#started += 1;
    const call: Promise<T> = Promise.resolve()
      .then(work)
      .finally(() => {
        // After forget(key) a newer call may hold the key: only this call removes itself.
        if (this.#inFlight.get(key) === call) this.#inFlight.delete(key);
      });
    this.#inFlight.set(key, call);
    assert(this.#inFlight.size <= this.#maxInFlightKeys, "single-flight map within its bound");
    return call;
  }

  /** The next `do(key)` starts a new call; true if a call was in flight. */
  forget(key: string): boolean {
    return this.#inFlight.delete(key);
  }
}

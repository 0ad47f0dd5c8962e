/**
 * In-process request coalescing (CA-20): while one load of a key is in flight, every
 * other caller in this process asking for the same key waits for that load instead of
 * starting its own. A process serving 100 concurrent misses of one key then sends one
 * query, not 100; across processes the distributed lease does the same job (CA-21).
 *
 * Failure is shared too: if the load rejects, every joined caller gets that rejection,
 * and the next caller starts afresh (a failed load is never cached here). Bounded by
 * `maxInFlightKeys`: past it new keys run uncoalesced rather than growing the map.
 *
 * @example
 * const coalescer = new RequestCoalescer<string>({ maxInFlightKeys: 10_000 });
 * const [a, b] = await Promise.all([
 *   coalescer.run("event:42", () => db.load(42)),
 *   coalescer.run("event:42", () => db.load(42)), // joins the first: one db.load
 * ]);
 */
import { requireInteger } from "./policy-errors.ts";

export interface RequestCoalescerOptions {
  readonly maxInFlightKeys: number;
}

export class RequestCoalescer<T> {
  readonly #inFlight = new Map<string, Promise<T>>();
  readonly #maxInFlightKeys: number;
  #started = 0;
  #joined = 0;
  #overflowed = 0;

  constructor(options: RequestCoalescerOptions) {
    requireInteger("maxInFlightKeys", options.maxInFlightKeys, 1, 10_000_000);
    this.#maxInFlightKeys = options.maxInFlightKeys;
  }

  /** Keys with a load in flight. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Loads started, callers that joined one, and calls run uncoalesced because the map was full. */
  get stats(): { started: number; joined: number; overflowed: number } {
    return { started: this.#started, joined: this.#joined, overflowed: this.#overflowed };
  }

  /** The in-flight load of `key`, or a new one from `work`. */
  run(key: string, work: () => Promise<T>): Promise<T> {
    const existing = this.#inFlight.get(key);
    if (existing !== undefined) {
      this.#joined += 1;
      return existing;
    }
    if (this.#inFlight.size >= this.#maxInFlightKeys) {
      this.#overflowed += 1;
      return work();
    }
    this.#started += 1;
    const load = Promise.resolve()
      .then(work)
      .finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, load);
    return load;
  }
}

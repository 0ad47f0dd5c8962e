/**
 * The bounded buffer between the redirect and the click store (US-15): `record` appends and
 * returns at once — or, when `maxEntries` are waiting, drops the visit and counts it, so a
 * slow or dead store never slows a redirect and never grows memory. The flusher takes
 * batches of at most `maxBatch` from the front; a batch the store refused can be put back at
 * the front while there is room (what does not fit is dropped and counted).
 *
 * @example
 * const buffer = new ClickBuffer({ maxEntries: 100_000 });
 * buffer.record(visit);            // the redirect's whole cost
 * const batch = buffer.take(5_000); // the flusher
 */
import type { Visit, VisitSink } from "./visit.ts";

/** Longest user-agent and referrer kept: a 16 kB header must not cost 16 kB of buffer. */
export const MAX_UA_CHARS = 256;
export const MAX_REFERRER_CHARS = 512;

export class ClickBuffer implements VisitSink {
  readonly maxEntries: number;
  #visits: Visit[] = [];
  #dropped = 0;
  #recorded = 0;

  readonly #onDrop: ((count: number) => void) | undefined;

  /** `onDrop`: told of every visit dropped (a metric); called on the redirect path, so it must be cheap. */
  constructor(options: { maxEntries: number; onDrop?: (count: number) => void }) {
    if (!Number.isInteger(options.maxEntries) || options.maxEntries < 1) {
      throw new RangeError(`maxEntries ${options.maxEntries} must be an integer >= 1`);
    }
    this.maxEntries = options.maxEntries;
    this.#onDrop = options.onDrop;
  }

  get size(): number {
    return this.#visits.length;
  }

  get stats() {
    return { recorded: this.#recorded, dropped: this.#dropped, waiting: this.#visits.length };
  }

  record(visit: Visit): void {
    if (this.#visits.length >= this.maxEntries) {
      this.#dropped += 1;
      this.#onDrop?.(1);
      return;
    }
    this.#recorded += 1;
    this.#visits.push({
      ...visit,
      userAgent: visit.userAgent?.slice(0, MAX_UA_CHARS),
      referrer: visit.referrer?.slice(0, MAX_REFERRER_CHARS),
    });
  }

  /** Up to `maxBatch` of the oldest visits, removed from the buffer. */
  take(maxBatch: number): Visit[] {
    return this.#visits.splice(0, maxBatch);
  }

  /** A batch the store refused goes back to the front, as much as fits; the rest is dropped and counted. Returns how many were dropped. */
  putBack(batch: readonly Visit[]): number {
    const room = Math.max(0, this.maxEntries - this.#visits.length);
    const kept = batch.slice(0, room);
    const lost = batch.length - kept.length;
    this.#visits = [...kept, ...this.#visits];
    this.#dropped += lost;
    if (lost > 0) this.#onDrop?.(lost);
    return lost;
  }
}

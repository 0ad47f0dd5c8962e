/**
 * Per-endpoint holds from Retry-After (WH-15, WH-16): an endpoint that answered 429/503
 * "come back in 30 s" gets no request from this process until then — not only the
 * delivery that got the answer, every delivery to that endpoint. The hold is in wall-clock
 * ms (it is compared with the store's times). Bounded: at most `maxEndpoints` holds; when
 * full, expired holds are dropped first, then the hold ending soonest (it had the least
 * left to protect).
 *
 * @example
 * const holds = new EndpointHolds({ maxEndpoints: 10_000 });
 * holds.hold("sub_1", nowMs + 30_000);
 * holds.heldUntil("sub_1", nowMs); // nowMs + 30_000; undefined once it passed
 */

export const DEFAULT_MAX_HOLDS = 10_000;

export class EndpointHolds {
  readonly #maxEndpoints: number;
  readonly #until = new Map<string, number>();

  constructor(options: { maxEndpoints?: number } = {}) {
    this.#maxEndpoints = options.maxEndpoints ?? DEFAULT_MAX_HOLDS;
    if (!Number.isSafeInteger(this.#maxEndpoints) || this.#maxEndpoints < 1)
      throw new RangeError("maxEndpoints must be an integer >= 1");
  }

  /** Holds `endpointId` until `untilMs` (a later hold wins over an earlier one). */
  hold(endpointId: string, untilMs: number, nowMs: number): void {
    if (!Number.isFinite(untilMs)) throw new RangeError("untilMs must be finite");
    if (untilMs <= nowMs) return;
    const known = this.#until.get(endpointId);
    if (known === undefined && this.#until.size >= this.#maxEndpoints) this.#evict(nowMs);
    this.#until.set(endpointId, Math.max(known ?? untilMs, untilMs));
  }

  /** When the hold on `endpointId` ends, or undefined when it is not held at `nowMs`. */
  heldUntil(endpointId: string, nowMs: number): number | undefined {
    const untilMs = this.#until.get(endpointId);
    if (untilMs === undefined) return undefined;
    if (untilMs > nowMs) return untilMs;
    this.#until.delete(endpointId);
    return undefined;
  }

  /** Forgets a hold (the endpoint was disabled: nothing will be sent to it anyway). */
  release(endpointId: string): void {
    this.#until.delete(endpointId);
  }

  get size(): number {
    return this.#until.size;
  }

  #evict(nowMs: number): void {
    let soonest: string | undefined;
    let soonestMs = Number.POSITIVE_INFINITY;
    for (const [id, untilMs] of this.#until) {
      if (untilMs <= nowMs) this.#until.delete(id);
      else if (untilMs < soonestMs) [soonest, soonestMs] = [id, untilMs];
    }
    if (this.#until.size >= this.#maxEndpoints && soonest !== undefined) this.#until.delete(soonest);
  }
}

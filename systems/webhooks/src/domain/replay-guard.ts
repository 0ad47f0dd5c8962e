/**
 * Replay protection for a receiver (WH-13, WH-14): a signature proves who sent a
 * message, not that it is the first time it arrives. Inside the timestamp tolerance
 * window a captured request still verifies, and at-least-once delivery resends on
 * purpose; remembering accepted `webhook-id`s for as long as they could still verify
 * turns both into no-ops.
 *
 * An id accepted at time t carries a timestamp ≤ t + tolerance, so it stops verifying by
 * t + 2·tolerance: entries are kept exactly that long. Insertion order is expiry order
 * (time only moves forward), so expiring is a walk from the front of a Map. When the
 * bound is reached the guard refuses rather than forgets: forgetting would reopen replay.
 *
 * @example
 * const guard = new ReplayGuard({ toleranceS: 300, maxEntries: 100_000 });
 * const { id } = verifyWebhook({ headers, body, secrets, nowS });
 * guard.accept(id, nowS); // throws WEBHOOK_REPLAY_DETECTED the second time
 */
import { deliveryErrors } from "../errors.ts";
import { DEFAULT_TOLERANCE_S } from "./signature.ts";

export interface ReplayGuardOptions {
  toleranceS?: number;
  /** Ids remembered at once: the receiver's memory bound. */
  maxEntries: number;
}

export class ReplayGuard {
  readonly toleranceS: number;
  readonly maxEntries: number;
  /** id → second after which it can no longer verify. */
  readonly #expiresAtS = new Map<string, number>();
  #lastNowS = Number.NEGATIVE_INFINITY;

  constructor(options: ReplayGuardOptions) {
    this.toleranceS = options.toleranceS ?? DEFAULT_TOLERANCE_S;
    if (!Number.isFinite(this.toleranceS) || this.toleranceS <= 0)
      throw new RangeError("toleranceS must be > 0");
    if (!Number.isSafeInteger(options.maxEntries) || options.maxEntries < 1) {
      throw new RangeError("maxEntries must be an integer >= 1");
    }
    this.maxEntries = options.maxEntries;
  }

  /** Records `id` as seen at `nowS`; throws WEBHOOK_REPLAY_DETECTED if it was already. */
  accept(id: string, nowS: number): void {
    // A clock stepping back must not reorder expiries: use the latest time seen.
    const atS = Math.max(nowS, this.#lastNowS);
    this.#lastNowS = atS;
    this.#expire(atS);
    if (this.#expiresAtS.has(id)) throw deliveryErrors.create("WEBHOOK_REPLAY_DETECTED", { fields: { id } });
    if (this.#expiresAtS.size >= this.maxEntries) {
      throw deliveryErrors.create("WEBHOOK_REPLAY_CACHE_FULL", { fields: { maxEntries: this.maxEntries } });
    }
    this.#expiresAtS.set(id, atS + 2 * this.toleranceS);
  }

  /** Ids remembered now. */
  get size(): number {
    return this.#expiresAtS.size;
  }

  #expire(nowS: number): void {
    for (const [id, expiresAtS] of this.#expiresAtS) {
      if (expiresAtS > nowS) return;
      this.#expiresAtS.delete(id);
    }
  }
}

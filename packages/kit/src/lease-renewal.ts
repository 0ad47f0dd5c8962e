/**
 * Keeps a short lease alive while the work it guards runs: renews it every `everyMs` (a third
 * of the lease is usual: two renewals may fail before it ends), stops when the work ends, and
 * when a renewal says the lease is gone, stops renewing and aborts `signal` — the holder must
 * stop working on the item (its writes are fenced anyway; this stops it spending effort).
 *
 * Why short leases renewed rather than one long lease: a crashed holder's item comes back one
 * lease after its last renewal (seconds), while a live holder keeps it for as long as its work
 * takes. A renewal that fails (the database did not answer) is reported and tried again on the
 * next tick: the lease may still be ours; only an answer "not yours" ends it.
 *
 * @example
 * const result = await whileRenewing(
 *   { everyMs: leaseMs / 3, renew: () => queue.renew(db, lease, { nowMs: clock.nowMs(), leaseMs }).then(Boolean) },
 *   (signal) => callAcquirer({ signal }),
 * );
 */

/** Renewals per lease: at a third of it, two renewals may be slow or fail before the lease ends. */
export const RENEWALS_PER_LEASE = 3;

export interface LeaseRenewalOptions {
  /** Pause between renewals, in ms (> 0): a third of the lease leaves room for two slow ones. */
  everyMs: number;
  /** Extends the lease; resolves false when it is no longer held (expired, taken over). */
  renew: () => Promise<boolean>;
  /** A renewal that threw (the store did not answer); the next tick tries again. */
  onError?: (error: unknown) => void;
  /** Called once when a renewal answers that the lease is lost. */
  onLost?: () => void;
}

export class LeaseRenewal {
  readonly #o: LeaseRenewalOptions;
  readonly #abort = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inFlight: Promise<void> | undefined;
  #stopped = false;
  #renewals = 0;

  constructor(options: LeaseRenewalOptions) {
    if (!(Number.isFinite(options.everyMs) && options.everyMs > 0)) {
      throw new RangeError(`everyMs must be a positive number of ms, got ${options.everyMs}`);
    }
    this.#o = options;
    this.#schedule();
  }

  /** Aborted when a renewal found the lease lost. */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get lost(): boolean {
    return this.#abort.signal.aborted;
  }

  /** Renewals that succeeded so far. */
  get renewals(): number {
    return this.#renewals;
  }

  /** Stops renewing; resolves once a renewal in flight has settled. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
  }

  #schedule(): void {
    if (this.#stopped || this.lost) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#inFlight = this.#tick();
    }, this.#o.everyMs);
    this.#timer.unref?.();
  }

  async #tick(): Promise<void> {
    try {
      const held = await this.#o.renew();
      if (held) this.#renewals++;
      else if (!this.#stopped) {
        this.#abort.abort(new Error("lease lost"));
        this.#o.onLost?.();
      }
    } catch (error) {
      this.#o.onError?.(error);
    } finally {
      this.#inFlight = undefined;
      this.#schedule();
    }
  }
}

/** Runs `work` with its lease renewed until it settles; renewal stops before this returns. */
export async function whileRenewing<T>(
  options: LeaseRenewalOptions,
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const renewal = new LeaseRenewal(options);
  try {
    return await work(renewal.signal);
  } finally {
    await renewal.stop();
  }
}

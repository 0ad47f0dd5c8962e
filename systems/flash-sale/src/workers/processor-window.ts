/**
 * The processor's side of FS-15's promise: at most `ratePerS` charge calls reach payments (and
 * the acquirer behind it) in ANY second, whatever each call's latency. Pacing the sends alone
 * does not promise that: a call sent at t reaches the acquirer at t + d, and d varies (a slow
 * saga, a loaded CPU), so calls spaced 1/rate apart can land bunched in one second. So each
 * call holds a permit from before it is sent until one second after it ends: a call that
 * reaches the processor in a second [T, T+1) is, at the last send of that second (or at the
 * last send before T, when none), either in flight or ended less than a second earlier — so
 * it holds a permit then, and the permits are `floor(ratePerS)`. Every call the processor
 * makes while a charge call is open (payments' authorize and capture) is covered; a saga
 * payments continues after answering 202 runs under payments' own acquirer limit (PY-12).
 *
 * The cost: a permit serves one call per (latency + 1 s), so the sustained rate is at most
 * permits / (1 s + latency) — the configured rate when calls are fast. Below one call a
 * second (`ratePerS` < 1) the one permit is held 1/ratePerS seconds. Waiters are served in
 * arrival order; their number is bounded by the caller's own lanes.
 *
 * @example
 * const window = new ProcessorWindow({ ratePerS: 50 });
 * const result = await window.run(() => charger.charge(input)); // ≤ 50 such calls land in any second
 */
import { Deque } from "@casebook/kit/deque";

/**
 * Added to every hold: a timer may fire a few ms before its delay by the wall clock (the event
 * loop's cached time is stale while a long callback runs), and the promise is about wall time.
 */
const TIMER_SLACK_MS = 10;

export interface ProcessorWindowOptions {
  /** Calls that may reach the processor in any one second. */
  ratePerS: number;
  /** Timers of the release (tests pass a fake); default setTimeout. */
  schedule?: (fn: () => void, ms: number) => void;
}

export class ProcessorWindow {
  /** Calls open or ended less than `holdMs` ago, at most. */
  readonly permits: number;
  /** How long a permit stays taken after its call ends. */
  readonly holdMs: number;
  readonly #schedule: (fn: () => void, ms: number) => void;
  #taken = 0;
  readonly #waiting = new Deque<() => void>();

  constructor(options: ProcessorWindowOptions) {
    const { ratePerS } = options;
    if (!(ratePerS > 0) || !Number.isFinite(ratePerS)) {
      throw new RangeError(`ratePerS must be a finite number > 0, got ${ratePerS}`);
    }
    this.permits = Math.max(1, Math.floor(ratePerS));
    this.holdMs = (ratePerS >= 1 ? 1_000 : Math.ceil(1_000 / ratePerS)) + TIMER_SLACK_MS;
    this.#schedule = options.schedule ?? ((fn, ms) => void setTimeout(fn, ms));
  }

  /** Permits taken now (open calls and ones ended less than holdMs ago). */
  get taken(): number {
    return this.#taken;
  }

  /** Runs `call` once a permit is free; the permit is given back holdMs after it settles. */
  async run<T>(call: () => Promise<T>): Promise<T> {
    await this.#acquire();
    try {
      return await call();
    } finally {
      this.#schedule(() => this.#release(), this.holdMs);
    }
  }

  #acquire(): Promise<void> {
    if (this.#taken < this.permits && this.#waiting.length === 0) {
      this.#taken += 1;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #release(): void {
    const next = this.#waiting.shift();
    // The permit passes straight to the next waiter: `taken` stays the same.
    if (next) next();
    else this.#taken -= 1;
  }
}

/**
 * When a client reconnects (CH-14): capped exponential backoff with full jitter from kit's
 * BackoffPolicy — jitter, because a gateway that drops 10,000 sockets at once would get
 * 10,000 reconnects in the same millisecond without it. A drain (4000) or a lifetime close
 * (4003) is not a failure: the first retry comes after a jittered pause within `baseMs`, so
 * the herd spreads even then. Attempts reset once a connection is welcomed.
 *
 * @example
 * const schedule = new ReconnectSchedule({ baseMs: 250, capMs: 30_000, random: Math.random });
 * schedule.nextDelayMs(); // 0..250, then 0..500, 0..1000, … up to 0..30000
 * schedule.reset();
 */
import { BackoffPolicy } from "@casebook/kit/backoff";
import type { RandomSource } from "@casebook/kit/random";

export interface ReconnectOptions {
  readonly baseMs: number;
  readonly capMs: number;
  readonly random: RandomSource;
}

export class ReconnectSchedule {
  readonly #policy: BackoffPolicy;
  #attempt = 0;

  constructor(options: ReconnectOptions) {
    this.#policy = new BackoffPolicy({
      baseMs: options.baseMs,
      capMs: options.capMs,
      jitter: "full",
      random: options.random,
    });
  }

  /** The pause before the next attempt; each call is one more failed attempt. */
  nextDelayMs(): number {
    this.#attempt++;
    return this.#policy.delayMs(this.#attempt);
  }

  reset(): void {
    this.#attempt = 0;
  }

  get attempts(): number {
    return this.#attempt;
  }
}

/**
 * One timeout per phase of an HTTP attempt — connect (DNS, TCP, TLS, and any wait for a
 * pooled socket), headers (request sent → response head), body (head → last byte) — and
 * the time each phase took. Splitting them is what lets a delivery log say "the
 * receiver accepted the connection but never answered" rather than just "timeout"
 * (STYLE: split timeouts by phase, as undici does). Used by `outbound.ts`; moved from
 * webhooks' workers (issue 10).
 *
 * @example
 * const timer = new PhaseTimer(systemClock, { connectMs: 5_000, headersMs: 10_000, bodyMs: 5_000 },
 *   (phase, timeoutMs) => req.destroy(timeoutError(phase, timeoutMs)));
 * timer.start("connect"); … timer.start("headers"); … timer.stop();
 */
import type { Clock } from "@casebook/kit/clock";

/** The phases with a timeout of their own (DNS runs inside `connect`, as in undici). */
export type TimedPhase = "connect" | "headers" | "body";

export interface PhaseTimeouts {
  /** DNS, TCP, TLS, and any wait for a pooled socket: a failure here sent nothing. */
  connectMs: number;
  /** Request sent → response head: the far side's processing time. */
  headersMs: number;
  /** Response head → last byte (the whole body, not the gap between chunks). */
  bodyMs: number;
}

/** Milliseconds each phase took (0 for a phase never reached). */
export interface PhaseTimings {
  connectMs: number;
  headersMs: number;
  bodyMs: number;
}

const TIMEOUT_OF: Record<TimedPhase, keyof PhaseTimeouts> = {
  connect: "connectMs",
  headers: "headersMs",
  body: "bodyMs",
};

export class PhaseTimer {
  readonly #clock: Clock;
  readonly #timeouts: PhaseTimeouts;
  readonly #onTimeout: (phase: TimedPhase, timeoutMs: number) => void;
  readonly #startedAtMs: Partial<Record<TimedPhase, number>> = {};
  readonly #tookMs: PhaseTimings = { connectMs: 0, headersMs: 0, bodyMs: 0 };
  #phase: TimedPhase | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    clock: Clock,
    timeouts: PhaseTimeouts,
    onTimeout: (phase: TimedPhase, timeoutMs: number) => void,
  ) {
    this.#clock = clock;
    this.#timeouts = timeouts;
    this.#onTimeout = onTimeout;
  }

  /** The phase running now (the one a failure happened in). */
  get phase(): TimedPhase {
    return this.#phase ?? "connect";
  }

  /** Ends the current phase and arms the next one's timeout. */
  start(phase: TimedPhase): void {
    this.#close();
    this.#phase = phase;
    this.#startedAtMs[phase] = this.#clock.monotonicMs();
    const timeoutMs = this.#timeouts[TIMEOUT_OF[phase]];
    // Not unref'd: an attempt in flight is work a graceful shutdown waits for.
    this.#timer = setTimeout(() => this.#onTimeout(phase, timeoutMs), timeoutMs);
  }

  /** Ends the current phase; no timeout fires after this. */
  stop(): void {
    this.#close();
    this.#phase = undefined;
  }

  /** Milliseconds each phase took (0 for a phase never reached). */
  timings(): PhaseTimings {
    return { ...this.#tookMs };
  }

  #close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const phase = this.#phase;
    if (phase === undefined) return;
    this.#tookMs[TIMEOUT_OF[phase]] = this.#clock.monotonicMs() - this.#startedAtMs[phase]!;
  }
}

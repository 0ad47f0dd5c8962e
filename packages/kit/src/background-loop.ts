/**
 * The loop every background worker runs (relays, retriers, sweepers): call the owner's
 * `round()` again and again until `stop()`, with three pacing rules.
 *
 * - A round that says more work is waiting (`true`, e.g. its batch came back full) is
 *   followed at once by the next — after yielding one macrotask, so a round that never
 *   really awaits cannot starve timers and I/O.
 * - Otherwise the loop pauses `idleMs`; `wake()` (new work arrived, a slot came free) and
 *   `stop()` cut the pause short. A wake during a round is kept, not lost: the pause after
 *   that round is skipped.
 * - A round that throws (the database is down) is reported to `onError` with the count of
 *   failures in a row, then the pause doubles from idleMs per failure up to a cap
 *   (failurePauseMs), optionally jittered, and is back to idleMs after a round that did not
 *   throw. Without it a loop whose round fails at once (connection refused) retries at its
 *   poll rate for the whole outage, filling the log and the pool's connect queue.
 *
 * Rounds never overlap, `stop()` resolves once the round in progress has finished, and no
 * error leaves the loop: not the round's, not onError's own.
 *
 * @example
 * const loop = new BackgroundLoop({
 *   name: "outbox relay",
 *   round: async () => (await relay.runOnce()).claimed === maxBatch, // full: more is due
 *   idleMs: 200,
 *   failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
 *   onError: (error, failures) => log.error({ err: error, failures }, "relay round failed"),
 * });
 * loop.start();
 * notifier.on("event", () => loop.wake());
 * await loop.stop(); // after the round in progress
 */
import { backoffDelayMs, type JitterMode, jitterDelayMs } from "./backoff.ts";
import type { RandomSource } from "./random.ts";

/**
 * How the pause grows after failed rounds: min(capMs, idleMs · 2^failures), never below
 * idleMs; a random source is required exactly when jitter needs one. `capMs` equal to
 * idleMs keeps the pause constant.
 */
export type FailureBackoff =
  | { capMs: number; jitter: "none"; random?: RandomSource }
  | { capMs: number; jitter: Exclude<JitterMode, "none">; random: RandomSource };

export interface BackgroundLoopOptions {
  /** Names the loop in the "already started" error and in warnings. */
  name: string;
  /** One round of work; resolves true when more work is waiting and the next round should run at once. */
  round: () => Promise<boolean>;
  /** Pause after a round that found no more work, in ms. */
  idleMs: number;
  failureBackoff: FailureBackoff;
  /** Told of every round that threw, with the number of rounds that failed in a row (1 for the first). */
  onError: (error: unknown, consecutiveFailures: number) => void;
  /**
   * Replaces the timer of the pauses (tests record the pauses with it). Still cut short by
   * wake() and stop(); a sleep that rejects just ends its pause.
   */
  sleep?: (ms: number) => Promise<void>;
}

function requirePositiveFinite(name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive finite number, got ${value}`);
  }
}

function validate(options: BackgroundLoopOptions): void {
  if (options.name.trim() === "") throw new TypeError("a background loop needs a name");
  requirePositiveFinite("idleMs", options.idleMs);
  const backoff = options.failureBackoff;
  requirePositiveFinite("failureBackoff.capMs", backoff.capMs);
  if (!["none", "full", "equal"].includes(backoff.jitter)) {
    throw new RangeError(`failureBackoff.jitter must be none, full or equal, got ${String(backoff.jitter)}`);
  }
  if (backoff.jitter !== "none" && backoff.random === undefined) {
    throw new TypeError(`failureBackoff.jitter "${backoff.jitter}" needs a random source`);
  }
}

/**
 * The pause after `consecutiveFailures` failed rounds (at least one): idleMs doubled once
 * per failure, capped at max(idleMs, capMs), then jittered. The exponent is bounded by
 * backoffDelayMs, so failure 10^6 costs what failure 10 costs.
 *
 * @example
 * [1, 2, 3, 4, 5].map((n) => failurePauseMs(n, 100, { capMs: 2_000, jitter: "none" })); // [200, 400, 800, 1600, 2000]
 */
export function failurePauseMs(consecutiveFailures: number, idleMs: number, backoff: FailureBackoff): number {
  if (!Number.isInteger(consecutiveFailures) || consecutiveFailures < 1) {
    throw new RangeError(`consecutiveFailures must be an integer >= 1, got ${consecutiveFailures}`);
  }
  // Attempt n + 1: the first failure already waits twice the idle pause.
  const delayMs = backoffDelayMs(consecutiveFailures + 1, idleMs, Math.max(idleMs, backoff.capMs));
  // random is only undefined with jitter "none" (checked in validate, and by the type).
  return backoff.jitter === "none" ? delayMs : jitterDelayMs(delayMs, backoff.jitter, backoff.random!);
}

/** Resolves after one macrotask: lets timers and I/O run between back-to-back rounds. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A `sleep` for a loop that must not hold the process open on its own (a node's cron, a daily
 * job): an unref'd timer. The loop still cuts it short on wake() and stop().
 *
 * @example
 * new BackgroundLoop({ name: "cron", round, idleMs: 100, failureBackoff, onError, sleep: unrefSleep });
 */
export function unrefSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * Runs `round` until stopped, pausing between rounds as the header describes.
 *
 * @example
 * const loop = new BackgroundLoop({ name: "sweeper", round: async () => { await sweep(); return false; },
 *   idleMs: 60_000, failureBackoff: { capMs: 60_000, jitter: "none" }, onError: (e) => log.error(e) });
 * loop.start();
 * await loop.stop();
 */
export class BackgroundLoop {
  readonly name: string;
  readonly #round: () => Promise<boolean>;
  readonly #idleMs: number;
  readonly #backoff: FailureBackoff;
  readonly #onError: (error: unknown, consecutiveFailures: number) => void;
  readonly #sleep: ((ms: number) => Promise<void>) | undefined;
  /** The loop in progress, until it has returned; undefined while not started. */
  #running: Promise<void> | undefined;
  #stopping = false;
  /** Set by wake(); cleared when a round starts, since that round serves it. */
  #wakeRequested = false;
  /** Ends the pause in progress, if any. */
  #endPause: (() => void) | undefined;

  constructor(options: BackgroundLoopOptions) {
    validate(options);
    this.name = options.name;
    this.#round = options.round;
    this.#idleMs = options.idleMs;
    this.#backoff = options.failureBackoff;
    this.#onError = options.onError;
    this.#sleep = options.sleep;
  }

  /** True from start() until the loop has returned after stop(). */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /** Starts the loop; its first round begins at once. Throws if it is running (or still stopping). */
  start(): void {
    if (this.#running !== undefined) throw new Error(`${this.name} already started`);
    this.#stopping = false;
    const running = this.#run().finally(() => {
      if (this.#running === running) this.#running = undefined;
    });
    this.#running = running;
  }

  /** Runs the next round now: cuts the pause in progress, or skips the pause after the round in progress. */
  wake(): void {
    this.#wakeRequested = true;
    this.#endPause?.();
  }

  /**
   * Starts no further round, cuts the pause in progress, and resolves once the round in
   * progress (if any) has finished. Idempotent; resolves at once when not started.
   */
  async stop(): Promise<void> {
    const running = this.#running;
    if (running === undefined) return;
    this.#stopping = true;
    this.#endPause?.();
    await running;
  }

  async #run(): Promise<void> {
    let failures = 0;
    // Unbounded by design: a worker's loop lives until stop(); each pass awaits a round and a pause or a yield.
    while (!this.#stopping) {
      this.#wakeRequested = false;
      let more = false;
      try {
        more = await this.#round();
        failures = 0;
      } catch (error) {
        failures += 1;
        this.#report(error, failures);
      }
      if (this.#stopping) break;
      if (more) await yieldToEventLoop();
      else
        await this.#pause(
          failures === 0 ? this.#idleMs : failurePauseMs(failures, this.#idleMs, this.#backoff),
        );
    }
  }

  #report(error: unknown, failures: number): void {
    try {
      this.#onError(error, failures);
    } catch (reportError) {
      // A reporter that throws must not end the loop (nor become an unhandled rejection);
      // a process warning is the one place left to say so.
      process.emitWarning(`${this.name}: onError threw while reporting a failed round`, {
        type: "BackgroundLoopWarning",
        detail:
          reportError instanceof Error ? (reportError.stack ?? reportError.message) : String(reportError),
      });
    }
  }

  /** Waits `ms`, or less if wake() or stop() comes first (or came during the round). */
  #pause(ms: number): Promise<void> {
    if (this.#wakeRequested || this.#stopping) return Promise.resolve();
    return new Promise((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const end = () => {
        clearTimeout(timer);
        if (this.#endPause === end) this.#endPause = undefined;
        resolve();
      };
      this.#endPause = end;
      if (this.#sleep === undefined) {
        timer = setTimeout(end, ms);
        return;
      }
      try {
        this.#sleep(ms).then(end, end);
      } catch {
        end(); // a sleep that throws at once ends its pause, like one that rejects
      }
    });
  }
}

/**
 * A checkout that serves at most `capacityPerS` requests a second, in arrival order, as a
 * saturated server does: a request over capacity is not refused, it waits — and its client,
 * which does not wait past `timeoutMs`, gives up on it (and, in FS-16's client model, tries
 * again later). Whatever is let through runs the real work (`serve`). Used by the console's
 * FS-16 scenario (arrival-curve-scenario.ts) to give "checkout's capacity" a concrete meaning.
 *
 * The pump earns `capacityPerS` tokens a second from elapsed time and keeps at most half a
 * second's (at least one), so no window of w seconds serves more than capacity × (w + 0.5) + 1;
 * an event loop stalled longer than that loses tokens: the gate then serves less, never more.
 * Bounded: at most `maxWaiting` requests wait; past it a request fails at once (counted as a
 * timeout: the client sees the same).
 *
 * @example
 * const gate = new CheckoutGate({ capacityPerS: 20, maxWaiting: 10_000 });
 * gate.start();
 * await gate.enter(1_000); // "served": let through within 1 s; "timed-out"; "stopped": the gate closed first
 * gate.stop();
 */
import { assert } from "@casebook/kit/assert";

/** How often the pump runs: tokens are earned from elapsed time, so this is only smoothness. */
const PUMP_EVERY_MS = 20;

export type GateOutcome = "served" | "timed-out" | "stopped";

interface Waiter {
  resolve(outcome: GateOutcome): void;
  timer: NodeJS.Timeout;
  done: boolean;
}

export class CheckoutGate {
  readonly #capacityPerS: number;
  readonly #maxWaiting: number;
  readonly #queue: Waiter[] = [];
  #head = 0;
  #tokens = 0;
  #lastMs = performance.now();
  #pump: NodeJS.Timeout | undefined;
  /** Requests let through, all told. */
  served = 0;

  constructor(options: { capacityPerS: number; maxWaiting: number }) {
    assert(options.capacityPerS > 0 && options.maxWaiting >= 1, "capacityPerS > 0, maxWaiting >= 1", options);
    this.#capacityPerS = options.capacityPerS;
    this.#maxWaiting = options.maxWaiting;
  }

  start(): void {
    this.#lastMs = performance.now();
    this.#pump = setInterval(() => this.#release(), PUMP_EVERY_MS);
  }

  stop(): void {
    clearInterval(this.#pump);
    for (let i = this.#head; i < this.#queue.length; i++) this.#finish(this.#queue[i]!, "stopped");
    this.#queue.length = 0;
    this.#head = 0;
  }

  /** Waits for a turn: "served" when let through within `timeoutMs`, "timed-out" when the client gave up first. */
  enter(timeoutMs: number): Promise<GateOutcome> {
    if (this.#queue.length - this.#head >= this.#maxWaiting) return Promise.resolve("timed-out");
    return new Promise((resolve) => {
      const waiter: Waiter = {
        resolve,
        done: false,
        timer: setTimeout(() => this.#finish(waiter, "timed-out"), timeoutMs),
      };
      this.#queue.push(waiter);
    });
  }

  #release(): void {
    const nowMs = performance.now();
    const most = Math.max(1, this.#capacityPerS / 2);
    this.#tokens = Math.min(this.#tokens + ((nowMs - this.#lastMs) * this.#capacityPerS) / 1_000, most);
    this.#lastMs = nowMs;
    while (this.#tokens >= 1 && this.#head < this.#queue.length) {
      const waiter = this.#queue[this.#head++]!;
      if (waiter.done) continue; // its client gave up: no token spent
      this.#tokens -= 1;
      this.served += 1;
      this.#finish(waiter, "served");
    }
    if (this.#head > 1_024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }

  #finish(waiter: Waiter, outcome: GateOutcome): void {
    if (waiter.done) return;
    waiter.done = true;
    clearTimeout(waiter.timer);
    waiter.resolve(outcome);
  }
}

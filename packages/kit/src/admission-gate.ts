/**
 * A bound on work in flight with a short, bounded queue in front: load shedding made
 * explicit. At most `maxInFlight` callers hold a slot; the next `maxQueued` wait in
 * arrival order; a caller that finds the queue full, or that has waited `maxQueueWaitMs`
 * without getting a slot, is turned away ("shed") — the caller answers "overloaded"
 * instead of letting work pile up where nobody bounds it (a socket buffer, an event
 * loop, a dependency's pipeline).
 *
 * What holds: slots held ≤ maxInFlight; queued ≤ maxQueued; a queued caller learns its
 * fate within maxQueueWaitMs plus one turn of the event loop. The deadline is checked
 * like a Redis reply deadline (infra's reply-deadline.ts): when the timer fires, the shed
 * waits for the next check phase, so slots freed by replies already in the sockets go to
 * the waiters first — a busy loop of our own delays the answer, it does not shed callers
 * whose slot had in fact come free. Time is the injected clock's monotonic ms.
 *
 * @example
 * const gate = new AdmissionGate({ maxInFlight: 256, maxQueued: 1_024, maxQueueWaitMs: 50, clock: systemClock });
 * const fate = await gate.enter();
 * if (fate !== "admitted") return reply.code(503).send({ code: "OVERLOADED" });
 * try { return await callDependency(); } finally { gate.leave(); }
 */
import type { Clock } from "./clock.ts";
import { Deque } from "./deque.ts";

/** Why a caller was or was not admitted. */
export type AdmissionFate = "admitted" | "queue-full" | "queue-wait";

export interface AdmissionGateOptions {
  /** Slots: callers doing the work at once. */
  readonly maxInFlight: number;
  /** Callers waiting for a slot; beyond it a caller is shed at once ("queue-full"). 0 = no queue. */
  readonly maxQueued: number;
  /** Longest wait for a slot, in ms; past it the caller is shed ("queue-wait"). */
  readonly maxQueueWaitMs: number;
  readonly clock: Clock;
}

interface Waiter {
  readonly deadlineMs: number;
  readonly settle: (fate: AdmissionFate) => void;
}

function requireCount(name: string, value: number, min: number): void {
  if (!(Number.isInteger(value) && value >= min))
    throw new RangeError(`${name} must be an integer >= ${min}, got ${value}`);
}

export class AdmissionGate {
  readonly #maxInFlight: number;
  readonly #maxQueued: number;
  readonly #maxQueueWaitMs: number;
  readonly #clock: Clock;
  readonly #queue = new Deque<Waiter>();
  #inFlight = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #shed = { "queue-full": 0, "queue-wait": 0 };

  constructor(options: AdmissionGateOptions) {
    requireCount("maxInFlight", options.maxInFlight, 1);
    requireCount("maxQueued", options.maxQueued, 0);
    if (!(Number.isFinite(options.maxQueueWaitMs) && options.maxQueueWaitMs > 0)) {
      throw new RangeError(`maxQueueWaitMs must be a positive finite number, got ${options.maxQueueWaitMs}`);
    }
    this.#maxInFlight = options.maxInFlight;
    this.#maxQueued = options.maxQueued;
    this.#maxQueueWaitMs = options.maxQueueWaitMs;
    this.#clock = options.clock;
  }

  /**
   * Takes a slot, waiting in the queue if none is free. "admitted" means the caller holds
   * a slot and MUST call `leave()` once; any other fate holds nothing.
   */
  enter(): AdmissionFate | Promise<AdmissionFate> {
    if (this.#inFlight < this.#maxInFlight && this.#queue.length === 0) {
      this.#inFlight++;
      return "admitted";
    }
    if (this.#queue.length >= this.#maxQueued) {
      this.#shed["queue-full"]++;
      return "queue-full";
    }
    return new Promise((settle) => {
      this.#queue.push({ deadlineMs: this.#clock.monotonicMs() + this.#maxQueueWaitMs, settle });
      this.#arm();
    });
  }

  /** Gives back a slot taken by an "admitted" enter(); the oldest waiter still in time gets it. */
  leave(): void {
    if (this.#inFlight === 0) throw new Error("AdmissionGate.leave() without a slot held");
    this.#inFlight--;
    this.#dispatch(false);
  }

  /** Slots held now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Callers waiting now. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Callers shed since start, by reason. */
  get shed(): Readonly<Record<"queue-full" | "queue-wait", number>> {
    return { ...this.#shed };
  }

  /** Hands free slots to the waiters in arrival order; with `shedExpired`, first sheds those past their deadline. */
  #dispatch(shedExpired: boolean): void {
    const nowMs = this.#clock.monotonicMs();
    for (let head = this.#queue.peek(); head !== undefined; head = this.#queue.peek()) {
      if (this.#inFlight < this.#maxInFlight) {
        this.#queue.shift();
        this.#inFlight++;
        head.settle("admitted");
      } else if (shedExpired && head.deadlineMs <= nowMs) {
        this.#queue.shift();
        this.#shed["queue-wait"]++;
        head.settle("queue-wait");
      } else break;
    }
    this.#arm();
  }

  /** One timer, for the oldest waiter's deadline (deadlines are in arrival order). */
  #arm(): void {
    const head = this.#queue.peek();
    if (head === undefined) {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      return;
    }
    if (this.#timer !== undefined) return;
    const waitMs = Math.max(0, head.deadlineMs - this.#clock.monotonicMs());
    this.#timer = setTimeout(() => {
      // After the poll phase: slots freed by replies already received go to waiters first.
      setImmediate(() => {
        this.#timer = undefined;
        this.#dispatch(true);
      });
    }, waitMs);
    this.#timer.unref();
  }
}

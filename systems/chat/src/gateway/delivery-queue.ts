/**
 * The gateway's routed frames, delivered in order in slices of at most `sliceMs` of the event
 * loop each. One Redis message of the send service's carries a whole routing batch — up to 1,024
 * frames, a group's frame for hundreds of sockets each — and delivered in one go it held a
 * gateway's loop for 100–300 ms at saturation (`nodejs_eventloop_lag_max_seconds`): meanwhile
 * no client frame was read and no send service answer either, so sends piled up behind the
 * in-flight bound and were refused, and the send service sat idle waiting for them. Between
 * slices the loop reads its sockets. `sliceMs` bounds the deliveries' JavaScript only: the
 * gateway's corked sockets are flushed at the slice's end, one system call each, on top of it
 * (capping those too cost throughput in the bench: fewer frames per system call; README, Bench).
 *
 * Bounded: past `maxPending` waiting items the queue is dropped whole and `onOverflow` runs —
 * the same as a routing gap (pub/sub lost them): the clients resync from the history.
 *
 * @example
 * const queue = new DeliveryQueue({ deliver: (e) => gateway.deliver(e), sliceMs: 5, maxPending: 65_536, onOverflow, onError });
 * queue.push(envelope); // delivered after the current turn, in push order
 */
import { Deque } from "@casebook/kit/deque";

export interface DeliveryQueueOptions<T> {
  readonly deliver: (item: T) => void;
  /** Longest run of deliveries before the loop gets a turn. */
  readonly sliceMs: number;
  /** Items waiting at most; one more drops them all and calls `onOverflow`. */
  readonly maxPending: number;
  readonly onOverflow: (dropped: number) => void;
  /** A delivery that threw: reported, and the next item goes on. */
  readonly onError: (err: unknown) => void;
  /** Monotonic ms; default performance.now. */
  readonly nowMs?: () => number;
}

export class DeliveryQueue<T> {
  readonly #o: DeliveryQueueOptions<T>;
  readonly #waiting = new Deque<T>();
  readonly #nowMs: () => number;
  #scheduled = false;

  constructor(options: DeliveryQueueOptions<T>) {
    this.#o = options;
    this.#nowMs = options.nowMs ?? (() => performance.now());
  }

  get pending(): number {
    return this.#waiting.length;
  }

  push(item: T): void {
    if (this.#waiting.length >= this.#o.maxPending) {
      const dropped = this.#waiting.length + 1;
      this.#waiting.clear();
      this.#o.onOverflow(dropped);
      return;
    }
    this.#waiting.push(item);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.#slice());
    }
  }

  #slice(): void {
    const endsAt = this.#nowMs() + this.#o.sliceMs;
    do {
      const item = this.#waiting.shift();
      if (item === undefined) break;
      try {
        this.#o.deliver(item);
      } catch (err) {
        this.#o.onError(err);
      }
    } while (this.#nowMs() < endsAt);
    if (this.#waiting.length > 0) setImmediate(() => this.#slice());
    else this.#scheduled = false;
  }
}

/**
 * The bounded, retrying queue every alert sink sends through (plain HTTP and the webhooks
 * system share it): the evaluator never waits — `send` queues and returns; past `maxQueued`
 * the oldest item goes, counted in `dropped` and reported to `onDropped`; one item is delivered at a time, tried at
 * most `attempts` times with a doubling pause from `retryBaseMs`, and given up (`onFailed`)
 * after that or at once when `deliver` throws an error `isFinal` calls final (a 4xx: a retry
 * cannot help). `close` empties the queue and waits for the item in flight.
 *
 * @example
 * const queue = new NotificationQueue<Body>({ deliver: (body) => post(body), maxQueued: 1_000, attempts: 5 });
 * queue.send(body);
 * await queue.close();
 */
/** The bounds a sink passes through to its queue. */
export type NotificationQueueBounds = Pick<
  NotificationQueueOptions<unknown>,
  "maxQueued" | "attempts" | "retryBaseMs"
> & {
  /** A notification pushed out of the full queue (never sent): counted by the caller. */
  readonly onDropped?: () => void;
};

export interface NotificationQueueOptions<T> {
  /** Delivers one item; resolves when it is accepted, throws to retry (or give up, see isFinal). */
  readonly deliver: (item: T) => Promise<void>;
  /** Items waiting at most; past it the oldest is dropped. Default 1,000. */
  readonly maxQueued?: number;
  /** Tries per item, the first included. Default 5. */
  readonly attempts?: number;
  /** Pause after the first failed try, doubled after each. Default 500. */
  readonly retryBaseMs?: number;
  /** True for an error no retry can fix: the item is given up at once. */
  readonly isFinal?: (error: unknown) => boolean;
  readonly onDelivered?: (item: T) => void;
  readonly onFailed?: (error: unknown, item: T) => void;
  /** An item pushed out of a full queue, never tried: the operator's signal that the receiver lags. */
  readonly onDropped?: (item: T) => void;
}

export class NotificationQueue<T> {
  readonly #options: NotificationQueueOptions<T>;
  readonly #queue: T[] = [];
  #running: Promise<void> | undefined;
  #closed = false;
  #wake: (() => void) | undefined;
  dropped = 0;
  delivered = 0;

  constructor(options: NotificationQueueOptions<T>) {
    this.#options = options;
  }

  send(item: T): void {
    if (this.#closed) return;
    if (this.#queue.length >= (this.#options.maxQueued ?? 1_000)) {
      const oldest = this.#queue.shift() as T;
      this.dropped++;
      this.#options.onDropped?.(oldest);
    }
    this.#queue.push(item);
    this.#running ??= this.#drain().finally(() => {
      this.#running = undefined;
    });
  }

  async #drain(): Promise<void> {
    for (let item = this.#queue.shift(); item !== undefined; item = this.#queue.shift()) {
      await this.#deliver(item);
    }
  }

  async #deliver(item: T): Promise<void> {
    const attempts = this.#options.attempts ?? 5;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts && !this.#closed; attempt++) {
      try {
        await this.#options.deliver(item);
        this.delivered++;
        this.#options.onDelivered?.(item);
        return;
      } catch (error) {
        lastError = error;
        if (this.#options.isFinal?.(error)) break;
      }
      if (attempt < attempts) await this.#pause((this.#options.retryBaseMs ?? 500) * 2 ** (attempt - 1));
    }
    this.#options.onFailed?.(lastError, item);
  }

  /** A pause that `close` cuts short. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#queue.length = 0;
    this.#wake?.();
    await this.#running;
  }
}

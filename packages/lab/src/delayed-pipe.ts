/**
 * One direction of a proxied TCP link (client→upstream or upstream→client) with
 * faults: each chunk waits its delay in a FIFO queue, so chunks stay in order even
 * when jitter gives a later chunk a shorter delay; a held link queues without
 * delivering; a discarding link drops what it reads. The queue is bounded: past
 * `maxBufferedBytes` the pipe stops reading its source, so the sender meets TCP
 * backpressure, as it would on a slow network, instead of the proxy growing.
 *
 * @example
 * const up = new DelayedPipe(client, upstream, { maxBufferedBytes: 1 << 20, delayMs: () => 50, mode: () => "pass" });
 * // later, after a fault is lifted:
 * up.pump();
 */
import type { Socket } from "node:net";

/** "pass" delivers (after the delay), "hold" queues until healed, "discard" drops what arrives. */
export type PipeMode = "pass" | "hold" | "discard";

export interface PipeOptions {
  /** Bound on bytes queued in this direction; reading pauses above it. */
  maxBufferedBytes: number;
  /** Delay for the next chunk, read at its arrival (latency plus jitter). */
  delayMs: () => number;
  /** The fault in force, read at each arrival and each delivery. */
  mode: () => PipeMode;
}

export interface PipeCounters {
  /** Bytes written to the target. */
  forwarded: number;
  /** Bytes read and thrown away (discard mode). */
  dropped: number;
  /** Bytes read and not yet written. */
  buffered: number;
  /** Times reading stopped because the queue was full. */
  readPauses: number;
}

interface Queued {
  chunk: Buffer;
  dueMs: number;
}

export class DelayedPipe {
  readonly counters: PipeCounters = { forwarded: 0, dropped: 0, buffered: 0, readPauses: 0 };
  readonly #source: Socket;
  readonly #target: Socket;
  readonly #options: PipeOptions;
  readonly #queue: Queued[] = [];
  #lastDueMs = 0;
  #timer: NodeJS.Timeout | undefined;
  #waitingDrain = false;
  #readPaused = false;
  #sourceEnded = false;
  #targetEnded = false;

  constructor(source: Socket, target: Socket, options: PipeOptions) {
    this.#source = source;
    this.#target = target;
    this.#options = options;
    source.on("data", (chunk: Buffer) => this.#onData(chunk));
    source.on("end", () => {
      this.#sourceEnded = true;
      this.pump();
    });
  }

  /** Delivers every chunk that is due, then arms a timer for the next; call again after a fault lifts. */
  pump(): void {
    if (this.#waitingDrain || this.#target.destroyed || this.#options.mode() !== "pass") return;
    this.#clearTimer();
    const now = performance.now();
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      if (head.dueMs > now) {
        this.#timer = setTimeout(() => this.pump(), head.dueMs - now);
        break;
      }
      this.#queue.shift();
      this.counters.buffered -= head.chunk.length;
      this.counters.forwarded += head.chunk.length;
      if (!this.#target.write(head.chunk)) {
        this.#waitingDrain = true;
        this.#target.once("drain", () => {
          this.#waitingDrain = false;
          this.pump();
        });
        break;
      }
    }
    this.#resumeReadingIfRoom();
    if (this.#queue.length === 0 && this.#sourceEnded && !this.#targetEnded) {
      this.#targetEnded = true;
      this.#target.end();
    }
  }

  /** Drops everything queued (a discarding fault loses what was in flight too). */
  discardQueued(): void {
    this.#clearTimer();
    for (const { chunk } of this.#queue.splice(0)) {
      this.counters.dropped += chunk.length;
      this.counters.buffered -= chunk.length;
    }
    this.#resumeReadingIfRoom();
  }

  /** Stops the timer; the sockets are the link's to destroy. */
  dispose(): void {
    this.#clearTimer();
    this.#queue.length = 0;
    this.counters.buffered = 0;
  }

  #onData(chunk: Buffer): void {
    if (this.#options.mode() === "discard") {
      this.counters.dropped += chunk.length;
      return;
    }
    // Never earlier than the chunk before it: jitter must not reorder a byte stream.
    const dueMs = Math.max(performance.now() + Math.max(0, this.#options.delayMs()), this.#lastDueMs);
    this.#lastDueMs = dueMs;
    this.#queue.push({ chunk, dueMs });
    this.counters.buffered += chunk.length;
    if (this.counters.buffered >= this.#options.maxBufferedBytes && !this.#readPaused) {
      this.#readPaused = true;
      this.counters.readPauses++;
      this.#source.pause();
    }
    if (this.#timer === undefined) this.pump();
  }

  #resumeReadingIfRoom(): void {
    if (this.#readPaused && this.counters.buffered < this.#options.maxBufferedBytes) {
      this.#readPaused = false;
      this.#source.resume();
    }
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

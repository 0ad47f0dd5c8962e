/**
 * A timeout that measures Redis, not our own event loop.
 *
 * A plain timer (ioredis's `commandTimeout` is one) is checked in the event loop's
 * timers phase, which runs BEFORE the poll phase that reads sockets. When the loop is
 * busy (a burst of requests to parse, a long synchronous task) the timer fires late, and
 * fires first: a reply that has been sitting in the socket for 19 of the 20 ms is
 * declared lost, and the caller falls back although Redis answered in time.
 *
 * Here the timer only arms the check: when it fires, the check waits one more turn of
 * the loop (`setImmediate` runs after the poll phase), so every reply already in the
 * socket is read first. A call is declared timed out only if its reply had not reached
 * the socket by the time the loop looked again — at least `timeoutMs` after the command
 * was written (the call is issued, and ioredis writes it to the socket, synchronously).
 * So a timeout is Redis-side latency (or a link that lost the reply), never our lag;
 * how late the timer fired is reported, for the event-loop-delay metric and logs.
 *
 * With a `ReplyLiveness` shared by the calls of one connection, "Redis-side latency" is
 * Redis's SILENCE: a call times out when no reply at all has come on the connection for
 * `timeoutMs` (Redis paused, hung, or the link dead), or when it has waited `maxWaitMs`
 * in all. A Redis working through a burst's queue on a CPU-starved host keeps answering
 * other calls, so its callers wait (up to maxWaitMs) instead of all falling back at once.
 *
 * @example
 * const runner = new DeadlineScriptRunner(new RedisScriptRunner(redis, registry), { timeoutMs: 20 });
 * await runner.run("token-bucket-n", keys, args); // rejects REDIS_TIMEOUT only if Redis was late
 */
import { redisErrors } from "./redis-errors.ts";
import type { ScriptArg } from "./script-contract.ts";
import type { ScriptCall } from "./script-registry.ts";
import type { ScriptRunner } from "./script-runner.ts";

/**
 * When a connection last delivered a reply (any command's): Redis working through a queue
 * keeps answering, a paused or hung Redis, or a dead link, goes silent.
 */
export class ReplyLiveness {
  #lastReplyMs = Number.NEGATIVE_INFINITY;

  /** A reply (or a Redis error reply) was read now. */
  noteReply(): void {
    this.#lastReplyMs = performance.now();
  }

  get lastReplyMs(): number {
    return this.#lastReplyMs;
  }
}

export interface ReplyDeadlineOptions {
  /**
   * Bound on Redis's silence, in ms: the call times out when no reply has come for this long
   * since its write — from it, or, with `liveness`, from any call on its connection.
   */
  readonly timeoutMs: number;
  /**
   * With `liveness`: bound on the call's whole wait, in ms, however busy Redis keeps
   * answering others (a Redis that is alive but slower than this is treated as down).
   * Default: timeoutMs (then the call's own reply is all that counts).
   */
  readonly maxWaitMs?: number;
  /** The connection's reply tracker: a reply to any call proves Redis alive. */
  readonly liveness?: ReplyLiveness;
  /** Told, when the deadline timer fired, how many ms later than due it ran (our loop's lag). */
  readonly onTimerLag?: (lagMs: number) => void;
}

/**
 * Settles like `call()`, or rejects REDIS_TIMEOUT when, one loop turn after a deadline
 * (see the module comment), Redis has been silent for `timeoutMs` or the call has waited
 * `maxWaitMs`. The call is started synchronously.
 */
export function withReplyDeadline<T>(call: () => Promise<T>, options: ReplyDeadlineOptions): Promise<T> {
  const { timeoutMs, onTimerLag, liveness } = options;
  const maxWaitMs = liveness ? Math.max(timeoutMs, options.maxWaitMs ?? timeoutMs) : timeoutMs;
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const writtenMs = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = (dueInMs: number) => {
      const armedMs = performance.now();
      timer = setTimeout(() => {
        onTimerLag?.(Math.max(0, performance.now() - armedMs - dueInMs));
        // After the poll phase: replies already in the socket are read (and settle) first.
        setImmediate(check);
      }, dueInMs);
    };
    const check = () => {
      if (settled) return;
      const nowMs = performance.now();
      const waitedMs = nowMs - writtenMs;
      const silentMs = nowMs - Math.max(writtenMs, liveness?.lastReplyMs ?? writtenMs);
      if (silentMs < timeoutMs && waitedMs < maxWaitMs) {
        arm(Math.max(1, Math.min(timeoutMs - silentMs, maxWaitMs - waitedMs)));
        return;
      }
      settled = true;
      const why = silentMs >= timeoutMs ? `no reply for ${timeoutMs} ms` : `no reply within ${maxWaitMs} ms`;
      reject(
        redisErrors.create("REDIS_TIMEOUT", {
          detail: `Redis gave ${why} (measured after reading the socket; the call waited ${Math.round(waitedMs)} ms).`,
          fields: { timeoutMs, maxWaitMs, waitedMs: Math.round(waitedMs), silentMs: Math.round(silentMs) },
        }),
      );
    };
    arm(timeoutMs);
    const done = () => {
      settled = true;
      clearTimeout(timer);
      liveness?.noteReply();
    };
    let pending: Promise<T>;
    try {
      pending = call();
    } catch (error) {
      settled = true;
      clearTimeout(timer);
      reject(error);
      return;
    }
    pending.then(
      (value) => {
        if (settled) {
          liveness?.noteReply();
          return;
        }
        done();
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        done();
        reject(error);
      },
    );
  });
}

/** A ScriptRunner whose every call (and batch) is bounded by withReplyDeadline. */
export class DeadlineScriptRunner implements ScriptRunner {
  readonly #inner: ScriptRunner;
  readonly #options: ReplyDeadlineOptions;

  /** Calls on one connection share one ReplyLiveness (given, or made here). */
  constructor(inner: ScriptRunner, options: ReplyDeadlineOptions) {
    if (!(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new RangeError(`timeoutMs must be a positive finite number, got ${options.timeoutMs}`);
    }
    this.#inner = inner;
    this.#options = { ...options, liveness: options.liveness ?? new ReplyLiveness() };
  }

  run(name: string, keys: string[], args: ScriptArg[]): Promise<unknown> {
    return withReplyDeadline(() => this.#inner.run(name, keys, args), this.#options);
  }

  /** One deadline for the whole batch (one round trip): a late batch rejects every call in it. */
  async runBatch(calls: readonly ScriptCall[]): Promise<PromiseSettledResult<unknown>[]> {
    return withReplyDeadline(() => this.#inner.runBatch(calls), this.#options);
  }
}

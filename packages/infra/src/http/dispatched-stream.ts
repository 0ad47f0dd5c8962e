/**
 * One streamed exchange over an undici pool (`dispatcher-pool.ts`), for `OutboundClient.stream`:
 * the same phases, deadline, abort and typed errors as the client's node:http exchange, and a
 * body handed over chunk by chunk as it arrives.
 *
 * - Until the response head: the client's phase timer (connect covers the wait for a pooled
 *   socket; headers starts when undici puts the request on a socket), the deadline and the
 *   caller's signal. A call given up before it reached a socket is aborted the moment it
 *   does, before a byte is written: nothing sent, as the connect phase promises.
 * - The body: an idle bound re-armed by every chunk, a byte bound, the caller's signal; a
 *   connection closed before the body's end is OUTBOUND_CONNECTION_FAILED, never an end.
 * - Backpressure: past `HIGH_WATER_CHUNKS` unread chunks the socket is paused, and resumed
 *   once the reader has taken all but `LOW_WATER_CHUNKS` — memory per stream stays bounded
 *   however slow the reader (an LLM client on a slow link).
 *
 * @example
 * const res = await dispatchStream({ pool: pools.poolFor(url), url, method: "POST", headers, body, timeouts,
 *   clock, deadlineMs: undefined, signal, idleMs: 30_000, maxStreamBytes: 64 << 20 });
 * for await (const chunk of res.body) relay(chunk);
 */
import type { IncomingHttpHeaders } from "node:http";
import type { Clock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import type { Dispatcher } from "undici";
import { outboundErrors, phaseTimeout, transportFailure } from "./outbound-errors.ts";
import { type PhaseTimeouts, PhaseTimer, type PhaseTimings } from "./phase-timer.ts";

/** Unread chunks at which the socket is paused. */
export const HIGH_WATER_CHUNKS = 16;
/** Unread chunks at or under which a paused socket is resumed. */
export const LOW_WATER_CHUNKS = 4;

export interface OutboundStream {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** Connect and headers phases (the body's is still running). */
  readonly timings: PhaseTimings;
  /** The body, chunk by chunk as it arrives; throws an OUTBOUND_* error when it does not end cleanly. */
  readonly body: AsyncIterable<Buffer>;
  /** Stops reading and closes the connection (the caller's client left). Idempotent. */
  close(): void;
}

export interface DispatchedStreamRequest {
  pool: Dispatcher;
  url: URL;
  method: string;
  headers: Record<string, string | string[]>;
  body: Buffer | undefined;
  timeouts: PhaseTimeouts;
  clock: Clock;
  /** Bounds the exchange up to the response head. */
  deadlineMs: number | undefined;
  signal: AbortSignal | undefined;
  idleMs: number;
  maxStreamBytes: number;
}

type Abort = (error?: Error) => void;

/** Dispatches the request; resolves at the response head with its body still arriving. */
export function dispatchStream(request: DispatchedStreamRequest): Promise<OutboundStream> {
  const { url, signal, deadlineMs } = request;
  const host = url.host;
  return new Promise((resolve, reject) => {
    /** undici's abort for this request, once it is on a socket. */
    let abort: Abort | undefined;
    /** Why the call was given up before it reached a socket. */
    let cancelled: Error | undefined;
    let settled = false;
    let body: DispatchedBody | undefined;
    let deadline: NodeJS.Timeout | undefined;
    const endHead = () => {
      timer.stop();
      clearTimeout(deadline);
      signal?.removeEventListener("abort", onAbort);
    };
    const fail = (error: CasebookError) => {
      if (settled) return;
      settled = true;
      endHead();
      reject(error);
      if (abort) abort(error);
      else cancelled = error;
    };
    const onAbort = () =>
      fail(
        outboundErrors.create("OUTBOUND_ABORTED", {
          fields: { phase: timer.phase, host },
          cause: signal?.reason,
        }),
      );
    const timer = new PhaseTimer(request.clock, request.timeouts, (phase, timeoutMs) =>
      fail(phaseTimeout(phase, timeoutMs, host)),
    );
    timer.start("connect");
    if (deadlineMs !== undefined) {
      deadline = setTimeout(
        () =>
          fail(
            outboundErrors.create("OUTBOUND_DEADLINE_EXCEEDED", {
              fields: { phase: timer.phase, deadlineMs, host },
            }),
          ),
        deadlineMs,
      );
    }
    signal?.addEventListener("abort", onAbort, { once: true });
    const handler: Dispatcher.DispatchHandler = {
      onConnect(undiciAbort: Abort) {
        if (cancelled !== undefined) return undiciAbort(cancelled);
        abort = undiciAbort;
        timer.start("headers");
      },
      onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void) {
        if (settled || abort === undefined) return false;
        if (statusCode < 200) return true; // an interim answer (100 Continue): the real one follows
        settled = true;
        endHead();
        body = new DispatchedBody(request, abort, resume);
        resolve({
          status: statusCode,
          headers: headersOf(rawHeaders),
          timings: timer.timings(),
          body: body,
          close: () => body?.close(),
        });
        return true;
      },
      onData(chunk: Buffer) {
        return body?.push(chunk) ?? false;
      },
      onComplete() {
        body?.end();
      },
      onError(error: Error) {
        if (body !== undefined) return body.fail(error);
        const phase = timer.phase; // read before fail stops the timer
        fail(transportFailure(error, phase, host));
      },
    };
    try {
      request.pool.dispatch(
        {
          path: `${url.pathname}${url.search}`,
          method: request.method,
          headers: request.headers,
          body: request.body,
        },
        handler,
      );
    } catch (error) {
      fail(transportFailure(error as Error, "connect", host));
    }
  });
}

/** The response head's fields as node:http gives them: lower-case names, repeats joined, set-cookie a list. */
function headersOf(raw: Buffer[]): IncomingHttpHeaders {
  const headers: Record<string, string | string[]> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] as Buffer).toString("latin1").toLowerCase();
    const value = (raw[i + 1] as Buffer).toString("latin1");
    const known = headers[name];
    if (name === "set-cookie") headers[name] = [...((known as string[] | undefined) ?? []), value];
    else headers[name] = known === undefined ? value : `${known}, ${value}`;
  }
  return headers;
}

/** A response body as an async iterable: chunks queued as undici hands them over, bounded. */
class DispatchedBody implements AsyncIterable<Buffer>, AsyncIterator<Buffer> {
  readonly #request: DispatchedStreamRequest;
  readonly #abort: Abort;
  readonly #resume: () => void;
  readonly #queue: Buffer[] = [];
  readonly #idle: NodeJS.Timeout;
  #bytes = 0;
  #paused = false;
  /** The body ended (cleanly, closed by the caller, or failed): no chunk is queued after this. */
  #done = false;
  #error: CasebookError | undefined;
  #waiter: { resolve: (result: IteratorResult<Buffer>) => void; reject: (error: Error) => void } | undefined;

  constructor(request: DispatchedStreamRequest, abort: Abort, resume: () => void) {
    this.#request = request;
    this.#abort = abort;
    this.#resume = resume;
    this.#idle = setTimeout(
      () =>
        this.#failWith(
          outboundErrors.create("OUTBOUND_BODY_TIMEOUT", {
            fields: { phase: "body", timeoutMs: request.idleMs, host: request.url.host },
          }),
        ),
      request.idleMs,
    );
    request.signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return this;
  }

  /** A chunk from undici; false pauses the socket. */
  push(chunk: Buffer): boolean {
    if (this.#done) return false;
    this.#bytes += chunk.length;
    if (this.#bytes > this.#request.maxStreamBytes) {
      this.#failWith(
        outboundErrors.create("OUTBOUND_RESPONSE_TOO_LARGE", {
          fields: { phase: "body", limitBytes: this.#request.maxStreamBytes, host: this.#request.url.host },
        }),
      );
      return false;
    }
    this.#idle.refresh();
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      waiter.resolve({ value: chunk, done: false });
      return true;
    }
    this.#queue.push(chunk);
    if (this.#queue.length < HIGH_WATER_CHUNKS) return true;
    this.#paused = true;
    return false;
  }

  /** The last byte arrived. */
  end(): void {
    if (this.#done) return;
    this.#finish();
    this.#wake();
  }

  /**
   * undici's failure of the body (a reset, a parse error): the chunks that came before it are
   * still read, then the error — what a truncated stream did deliver counts.
   */
  fail(error: Error): void {
    if (this.#done) return;
    this.#failWith(transportFailure(error, "body", this.#request.url.host), "keep");
  }

  /** Stops reading and closes the connection; a reader sees the end. Idempotent. */
  close(): void {
    if (this.#done) return;
    this.#finish();
    this.#queue.length = 0;
    this.#abort(new Error("closed by the caller"));
    this.#wake();
  }

  next(): Promise<IteratorResult<Buffer>> {
    const chunk = this.#queue.shift();
    if (chunk !== undefined) {
      if (this.#paused && this.#queue.length <= LOW_WATER_CHUNKS) {
        this.#paused = false;
        this.#resume();
      }
      return Promise.resolve({ value: chunk, done: false });
    }
    const error = this.#error;
    if (error !== undefined) {
      this.#error = undefined; // thrown once; the iteration is over after it
      return Promise.reject(error);
    }
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
    });
  }

  /** The reader left the loop early: the rest is not wanted. */
  return(): Promise<IteratorResult<Buffer>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  readonly #onAbort = () =>
    this.#failWith(
      outboundErrors.create("OUTBOUND_ABORTED", {
        fields: { phase: "body", host: this.#request.url.host },
        cause: this.#request.signal?.reason,
      }),
    );

  /** Ends the body with `error`; our own bounds and the caller's abort drop what is unread. */
  #failWith(error: CasebookError, unread: "keep" | "drop" = "drop"): void {
    if (this.#done) return;
    this.#finish();
    this.#error = error;
    if (unread === "drop") this.#queue.length = 0;
    this.#abort(error);
    this.#wake();
  }

  #finish(): void {
    this.#done = true;
    clearTimeout(this.#idle);
    this.#request.signal?.removeEventListener("abort", this.#onAbort);
  }

  /** Hands the ending (clean or failed) to a reader waiting for a chunk. */
  #wake(): void {
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    const error = this.#error;
    this.#error = undefined;
    if (error !== undefined) waiter.reject(error);
    else waiter.resolve({ value: undefined, done: true });
  }
}

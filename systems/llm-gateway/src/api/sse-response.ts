/**
 * The gateway's side of a stream to its client (LG-01/02/03): the SSE head sent at once (the
 * provider has answered; its first token may be seconds away), each event written the moment it
 * is whole (no buffer of ours in between; Node's socket write is the only one, and backpressure
 * from a slow reader is awaited, never piled up),
 * a keep-alive comment whenever the stream has been silent `keepAliveMs` (a load balancer
 * cuts idle connections, and a model may pause longer than its idle timeout), and an
 * error event — OpenAI's `data: {"error":{…}}`, which the SDK throws as an APIError — when
 * the stream cannot end well. `closed` tells the relay the client has gone (LG-04).
 *
 * @example
 * const sse = openSseResponse(request, reply, { keepAliveMs: 15_000 });
 * await sse.write('data: {"choices":[…]}\n\n');
 * sse.end();
 */
import { once } from "node:events";
import type { FastifyReply, FastifyRequest } from "fastify";

/** An SSE comment: clients ignore it, every idle timer between them sees traffic. */
export const KEEP_ALIVE = ": keep-alive\n\n";

export interface SseResponse {
  /** Resolves when the event is written (after a drain if the client reads slowly, or at once if it left). */
  write(event: string): Promise<void>;
  /**
   * Events whole at the same moment (one read from the provider), in one socket write: each
   * is still sent the moment it is whole, and N events cost one syscall, not N.
   */
  writeAll(events: readonly string[]): Promise<void>;
  /** Ends with an error event (no `[DONE]`): the client must not take what it has for a whole answer. */
  fail(error: { message: string; type: string; code: string }): void;
  /** Ends the response; `last` (the stream's last events) goes in the same socket write as the end. */
  end(last?: readonly string[]): void;
  /** True once the client's connection is gone before the end. */
  readonly closed: boolean;
  /** Aborts when the client goes away before the end. */
  readonly signal: AbortSignal;
  /** Keep-alive comments written so far. */
  readonly keepAlives: number;
}

export function openSseResponse(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { keepAliveMs: number; signal: AbortSignal; headers?: Readonly<Record<string, string>> },
): SseResponse {
  const raw = reply.raw;
  reply.hijack();
  raw.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-cache",
    connection: "keep-alive",
    // nginx and others buffer proxied responses unless told not to (LG-02).
    "x-accel-buffering": "no",
    "x-request-id": request.id,
    ...options.headers,
  });
  // The head leaves now, while the provider is still thinking: the client reads it (and sets up
  // its response, its parser, its SDK stream) in that wait, not after the first token arrives.
  raw.flushHeaders();
  let keepAlives = 0;
  // One timer for the stream, pushed back by every write (refresh: no timer made per event).
  const timer = setTimeout(function keepAlive() {
    if (raw.writableEnded || raw.destroyed) return;
    keepAlives += 1;
    raw.write(KEEP_ALIVE);
    timer.refresh();
  }, options.keepAliveMs);
  const arm = () => timer.refresh();
  const finish = () => clearTimeout(timer);
  raw.once("close", finish);
  const write = async (event: string) => {
    if (raw.writableEnded || raw.destroyed) return;
    arm();
    if (!raw.write(event)) {
      // A slow reader: wait for it (or for it to leave), never queue events in memory past Node's buffer.
      await Promise.race([once(raw, "drain"), once(raw, "close")]);
    }
  };
  return {
    write,
    writeAll: (events) => (events.length === 0 ? Promise.resolve() : write(events.join(""))),
    fail(error) {
      finish();
      if (raw.writableEnded || raw.destroyed) return;
      raw.end(`data: ${JSON.stringify({ error: { ...error, param: null } })}\n\n`);
    },
    end(last = []) {
      finish();
      if (raw.writableEnded) return;
      // One write for the last events and the chunked encoding's end, not one for each.
      if (last.length > 0 && !raw.destroyed) raw.end(last.join(""));
      else raw.end();
    },
    get closed() {
      return options.signal.aborted;
    },
    signal: options.signal,
    get keepAlives() {
      return keepAlives;
    },
  };
}

/** An AbortController that aborts when the client leaves before the response is finished. */
export function clientGone(reply: FastifyReply): AbortController {
  const controller = new AbortController();
  reply.raw.once("close", () => {
    if (!reply.raw.writableFinished) controller.abort(new Error("the client closed the connection"));
  });
  return controller;
}

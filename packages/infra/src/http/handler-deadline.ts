/**
 * The handler's deadline: a route that has not answered within its bound answers 503
 * HANDLER_TIMEOUT (problem+json), or — its head already sent — has its response destroyed.
 * Ours rather than Fastify's `handlerTimeout`, which Fastify 5 disarms on the request's
 * 'close', and Node emits that once a request body has been READ: every POST with a body was
 * unbounded (a GET, whose body nobody reads, was not). The timer here is armed when the
 * request arrives and disarmed only when the response is done (`onResponse`), whatever
 * happened to the request's body.
 *
 * A reply handed over to the route (`reply.hijack()`: an SSE stream, a WebSocket upgrade) is
 * the route's to bound from then on: the deadline covers the time until it is handed over.
 *
 * Per route, `config: { handlerTimeoutMs }` replaces the service's bound (a generation that
 * streams for minutes, an upload). Fastify's own `handlerTimeout` route option is refused at
 * registration: it would arm the broken timer beside this one.
 *
 * @example
 * installHandlerDeadline(app, 30_000);
 * app.post("/v1/chat/completions", { config: { handlerTimeoutMs: 600_000 } }, handler);
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { httpErrors } from "./http-errors.ts";

declare module "fastify" {
  interface FastifyContextConfig {
    /** This route's handler deadline in ms (see handler-deadline.ts); default the service's. */
    handlerTimeoutMs?: number;
  }
}

const DEADLINE = Symbol("handlerDeadline");

type WithDeadline = FastifyRequest & { [DEADLINE]?: NodeJS.Timeout };

function positiveMs(name: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
    throw new TypeError(`${name} must be a whole number of ms > 0, got ${String(value)}`);
  return value;
}

function expire(request: FastifyRequest, reply: FastifyReply): void {
  if (reply.sent) return; // answered, or handed over to the route (hijacked)
  if (reply.raw.headersSent) {
    // A head is out: a second answer is impossible, and a truncated body must not pass for a whole one.
    reply.raw.destroy(httpErrors.create("HANDLER_TIMEOUT"));
    return;
  }
  request.log.warn({ route: request.routeOptions.url }, "handler deadline passed: answering 503");
  reply.send(httpErrors.create("HANDLER_TIMEOUT"));
}

/** Arms every request's deadline (`defaultMs`, or its route's `config.handlerTimeoutMs`). */
export function installHandlerDeadline(app: FastifyInstance, defaultMs: number): void {
  positiveMs("handlerTimeoutMs", defaultMs);
  // Declared up front, so every request object has the field from its construction (one shape).
  app.decorateRequest(DEADLINE, undefined);
  app.addHook("onRoute", (route) => {
    if ((route as { handlerTimeout?: unknown }).handlerTimeout !== undefined)
      throw new TypeError(
        `route ${route.url}: Fastify's handlerTimeout is never armed for a request with a body; use config.handlerTimeoutMs`,
      );
    const own = (route.config as { handlerTimeoutMs?: unknown } | undefined)?.handlerTimeoutMs;
    if (own !== undefined) positiveMs(`route ${route.url}: config.handlerTimeoutMs`, own);
  });
  // Callback hooks: no promise per request for a timer's arming and disarming.
  app.addHook("onRequest", (request, reply, done) => {
    const ms = request.routeOptions.config.handlerTimeoutMs ?? defaultMs;
    (request as WithDeadline)[DEADLINE] = setTimeout(expire, ms, request, reply);
    done();
  });
  app.addHook("onResponse", (request, _reply, done) => {
    clearTimeout((request as WithDeadline)[DEADLINE]);
    done();
  });
}

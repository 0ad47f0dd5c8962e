/**
 * The one body parser every service has: `application/json` (any parameters),
 * nothing else. One rule for every other Content-Type, `text/plain` included:
 * 415 (Fastify's stock text/plain parser let a string through to fail schema
 * validation with a 400 while `text/csv` got a 415).
 *
 * - An empty body is "no body": a route that takes none (a void, a replay, a
 *   rotate-secret) accepts a client that always sends `Content-Type:
 *   application/json`; a route that takes one answers 400 `/body must be object`
 *   from its schema, like a request without a body.
 * - Not JSON → 400 REQUEST_MALFORMED.
 * - A `__proto__` key, `constructor.prototype`, U+0000 or a lone surrogate in any
 *   key or string → 400 REQUEST_INVALID naming the field (text-guard.ts), before
 *   validation, hooks or the handler see the body.
 *
 * @example
 * installJsonBodyParser(app);
 * // POST {"a":{"__proto__":{"x":1}}} → 400, errors[0].field "/body/a/__proto__"
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { httpErrors } from "./http-errors.ts";
import { findUnacceptableText, unacceptableTextError } from "./text-guard.ts";

const MALFORMED_DETAIL = "The body is not valid JSON; send one JSON value, or no body at all.";

/** The parsed body, undefined for an empty one; throws the 400 for anything unacceptable. */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) return undefined;
  let body: unknown;
  try {
    // JSON.parse creates `__proto__` as an own data property (never sets the prototype): the walk below finds it.
    body = JSON.parse(text);
  } catch {
    throw httpErrors.create("REQUEST_MALFORMED", { detail: MALFORMED_DETAIL });
  }
  const problem = findUnacceptableText(body, "/body");
  if (problem !== undefined) throw unacceptableTextError(problem);
  return body;
}

/** Replaces Fastify's parsers (JSON and text/plain) with `parseJsonBody` for `application/json` only. */
export function installJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    "application/json",
    { parseAs: "string" },
    (
      _request: FastifyRequest,
      text: string | Buffer,
      done: (error: Error | null, body?: unknown) => void,
    ) => {
      let body: unknown;
      try {
        body = parseJsonBody(String(text));
      } catch (error) {
        done(error as Error);
        return;
      }
      done(null, body);
    },
  );
}

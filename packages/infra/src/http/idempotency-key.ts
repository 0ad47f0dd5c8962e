/**
 * The Idempotency-Key header of every route that takes one (the rule is
 * `@casebook/kit/idempotency-key`: 1 to 255 visible ASCII characters, Stripe's bound):
 *
 * - `idempotencyKeyHeader` is its JSON schema, for a route's `headers` schema, so ajv refuses a
 *   bad key before the handler runs: 400 `REQUEST_INVALID` with
 *   `errors: [{ field: "/headers/idempotency-key", message }]`;
 * - `idempotencyKeyOf` reads it in a handler: the same 400, the same field, for a route without
 *   the schema, and undefined when the header was not sent (whether that is allowed — optional,
 *   or the system's own "send a key" error — is the route's call).
 *
 * A bad key is refused before anything is stored, so the client can fix it and retry.
 *
 * @example
 * app.post("/v1/things", { schema: { headers: { type: "object", properties: { ...idempotencyKeyHeaders() } } } },
 *   async (request) => { const key = idempotencyKeyOf(request.headers); ... });
 */
import { commonErrors } from "@casebook/kit/errors";
import type { StoredResponse } from "@casebook/kit/idempotency";
import {
  IDEMPOTENCY_KEY_MAX_CHARS,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_RULE,
  isIdempotencyKey,
} from "@casebook/kit/idempotency-key";
import type { FastifyReply } from "fastify";

/** Header names reach Node lower-cased. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** The JSON pointer a 400 names: the same whether ajv or `idempotencyKeyOf` refused the key. */
export const IDEMPOTENCY_KEY_FIELD = `/headers/${IDEMPOTENCY_KEY_HEADER}`;

/** What the key means, when a route says nothing more specific. */
export const DEFAULT_IDEMPOTENCY_KEY_DESCRIPTION =
  "1-255 visible ASCII characters (0x21-0x7E): a fresh one per operation, the same one on every retry of it";

/**
 * The header's JSON schema; `description` says what the key means on this route (in /openapi.json).
 *
 * @example
 * idempotencyKeyHeader("Same key, same event"); // { type: "string", minLength: 1, maxLength: 255, pattern, description }
 */
export function idempotencyKeyHeader(description: string = DEFAULT_IDEMPOTENCY_KEY_DESCRIPTION) {
  return {
    type: "string",
    minLength: 1,
    maxLength: IDEMPOTENCY_KEY_MAX_CHARS,
    pattern: IDEMPOTENCY_KEY_PATTERN,
    description,
  } as const;
}

/**
 * `{ "idempotency-key": schema }`, to spread into a route's `headers.properties`.
 *
 * @example
 * const headers = { type: "object", properties: { ...idempotencyKeyHeaders() } };
 */
export function idempotencyKeyHeaders(description?: string) {
  return { [IDEMPOTENCY_KEY_HEADER]: idempotencyKeyHeader(description) } as {
    "idempotency-key": ReturnType<typeof idempotencyKeyHeader>;
  };
}

/**
 * The request's Idempotency-Key, or undefined when none was sent; a bad one throws the 400
 * `REQUEST_INVALID` naming `/headers/idempotency-key` (a repeated header, which Node joins with
 * ", ", is bad too).
 *
 * @example
 * const key = idempotencyKeyOf(request.headers);
 * if (key === undefined) throw myErrors.create("THINGS_IDEMPOTENCY_KEY_MISSING");
 */
export function idempotencyKeyOf(
  headers: Readonly<Record<string, string | string[] | undefined>>,
): string | undefined {
  const raw = headers[IDEMPOTENCY_KEY_HEADER];
  if (raw === undefined) return undefined;
  if (isIdempotencyKey(raw)) return raw;
  throw commonErrors.create("REQUEST_INVALID", {
    fields: { errors: [{ field: IDEMPOTENCY_KEY_FIELD, message: IDEMPOTENCY_KEY_RULE }] },
  });
}

/**
 * Sends a stored answer (an Idempotency-Key's first response, or one just stored) byte for byte:
 * its status, headers and body, so a replay is indistinguishable from the first answer.
 *
 * @example
 * if (begun.kind === "replay") return sendStoredResponse(reply, begun.response);
 */
export function sendStoredResponse(reply: FastifyReply, response: StoredResponse): FastifyReply {
  return reply.code(response.status).headers(response.headers).send(Buffer.from(response.body));
}

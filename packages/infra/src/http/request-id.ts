/**
 * Request ids: honour the caller's `x-request-id` so one id follows a request
 * across services, but only when it is short and made of safe characters — the
 * id lands in every log line and in a response header, so an unchecked one is a
 * log-injection and header-injection vector. Otherwise generate a fresh one.
 *
 * @example
 * const genReqId = requestIdGenerator(() => randomUUID());
 * genReqId({ headers: { "x-request-id": "checkout-7f3a" } }); // "checkout-7f3a"
 * genReqId({ headers: { "x-request-id": "bad id\n" } });      // a fresh UUID
 */
import { randomUUID } from "node:crypto";

export const REQUEST_ID_HEADER = "x-request-id";

/** Longest incoming id we keep: a UUID is 36, a W3C trace id 32; 128 leaves room for prefixes. */
export const maxRequestIdLength = 128;

const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]+$/;

/** The incoming id when it is acceptable, else undefined. A repeated header is refused: which one is true? */
export function acceptRequestId(value: string | string[] | undefined): string | undefined {
  if (typeof value !== "string") return undefined;
  if (value.length === 0 || value.length > maxRequestIdLength) return undefined;
  return SAFE_REQUEST_ID.test(value) ? value : undefined;
}

/** Fastify's `genReqId`: the caller's id when acceptable, else `newId()` (random UUID by default). */
export function requestIdGenerator(
  newId: () => string = randomUUID,
): (request: { headers: Record<string, string | string[] | undefined> }) => string {
  return (request) => acceptRequestId(request.headers[REQUEST_ID_HEADER]) ?? newId();
}

/**
 * The codes the HTTP service base answers with beyond `commonErrors` (which it
 * reuses for REQUEST_INVALID, REQUEST_TOO_LARGE, RESOURCE_NOT_FOUND and
 * INTERNAL_ERROR). Timeouts are split by phase: the client was slow sending
 * (REQUEST_TIMEOUT, 408) versus we were slow answering (HANDLER_TIMEOUT, 503).
 *
 * @example
 * throw httpErrors.create("REQUEST_MEDIA_TYPE_UNSUPPORTED", { fields: { contentType: "text/csv" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const httpErrors = defineErrors({
  REQUEST_MALFORMED: {
    status: 400,
    message: "The request could not be parsed; send well-formed HTTP and a valid JSON body.",
  },
  REQUEST_MEDIA_TYPE_UNSUPPORTED: {
    status: 415,
    message: "This endpoint does not accept that Content-Type; send `application/json`.",
  },
  REQUEST_METHOD_NOT_ALLOWED: {
    status: 405,
    message: "This path does not accept that method; use one listed in the `Allow` header (and `allow`).",
  },
  REQUEST_TIMEOUT: {
    status: 408,
    message: "The request did not arrive in time; send the whole request without pausing.",
  },
  REQUEST_HEADERS_TOO_LARGE: {
    status: 431,
    message: "The request headers are too large; send fewer or shorter headers.",
  },
  REQUEST_REJECTED: {
    status: 400,
    message: "The request was rejected; `detail` says why and `status` carries the HTTP status.",
  },
  HANDLER_TIMEOUT: {
    status: 503,
    message: "The service took longer than this endpoint allows; retry, or ask for less at once.",
  },
  SERVICE_CLOSING: {
    status: 503,
    message: "This instance is shutting down; retry and another instance will answer.",
  },
});

export type HttpErrorCode = keyof typeof httpErrors.specs;

/**
 * Wires problem+json into every way a Fastify service can fail: thrown errors
 * and schema validation (error handler), unknown routes (not-found handler), bad
 * URL encoding (frameworkErrors) and unparseable HTTP (clientErrorHandler, raw
 * socket). Each response carries `x-request-id`; each is logged once with the id.
 *
 * A system whose clients expect another error shape on some paths (an OpenAI-compatible
 * API: `{"error":{"message","type","param","code"}}` under `/v1/`) passes `errorFormats`:
 * the same problem — status, code, headers, log line — written in that shape instead of
 * problem+json. The edge stays the shared one; only the last step, the bytes, differ.
 *
 * @example
 * installErrorHandling(app, { knownCodes: new Set(Object.keys(myErrors.specs)) });
 */
import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { CasebookError, commonErrors } from "@casebook/kit/errors";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { noteProblemCode } from "./access-log.ts";
import { type HttpErrorCode, httpErrors } from "./http-errors.ts";
import type { Logger } from "./logger.ts";
import type { RouteMethods } from "./method-not-allowed.ts";
import {
  describeError,
  PROBLEM_CONTENT_TYPE,
  type Problem,
  type ProblemParts,
  serializeProblem,
  toProblem,
} from "./problem.ts";
import { REQUEST_ID_HEADER } from "./request-id.ts";

/**
 * Another wire shape for the errors of the paths under `pathPrefix` (see the module comment).
 *
 * @example
 * const openAi: ErrorFormat = { pathPrefix: "/v1/", contentType: "application/json",
 *   body: (problem) => JSON.stringify({ error: { message: problem.detail, type: "invalid_request_error", param: null, code: problem.code } }) };
 */
export interface ErrorFormat {
  /** Requests whose path starts with this are answered in this format: `/v1/`. */
  readonly pathPrefix: string;
  readonly contentType: string;
  /** The body for `problem` (status and headers stay the problem's); must not throw. */
  body(problem: Problem): string;
}

/** The format for `path`: the first whose prefix matches, else undefined (problem+json). */
export function errorFormatFor(
  formats: readonly ErrorFormat[] | undefined,
  path: string,
): ErrorFormat | undefined {
  return formats?.find((format) => path.startsWith(format.pathPrefix));
}

/** The path part of a request URL: the query string may hold tokens and is not the problem's identity. */
function pathOf(url: string): string {
  const query = url.indexOf("?");
  return query === -1 ? url : url.slice(0, query);
}

function logProblem(
  log: FastifyBaseLogger,
  error: unknown,
  described: ProblemParts,
  knownCodes?: ReadonlySet<string>,
): void {
  const { status, code, detail } = described;
  if (code === "INTERNAL_ERROR") {
    // The full error, stack and cause included, goes to the log only: the client got a generic detail.
    log.error({ err: error, code, status }, "request failed");
  } else if (status >= 500) {
    // A failure we named (dependency down, closing, too slow): worth a look, not a page.
    log.warn({ err: error, code, status, detail }, "request failed");
  } else {
    // debug: the access line records the 4xx (bounded per second); this one adds the detail when asked.
    log.debug({ code, status, detail }, "request rejected");
  }
  if (knownCodes && error instanceof CasebookError && !knownCodes.has(error.code)) {
    log.warn({ code: error.code }, "error code is in no registry passed to createService({ errors })");
  }
}

/** Answers `error` as problem+json; the reply's earlier headers (x-request-id) are kept. */
export function sendProblem(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  knownCodes?: ReadonlySet<string>,
  formats?: readonly ErrorFormat[],
): FastifyReply {
  const described = describeError(error, { bodyLimitBytes: request.routeOptions.bodyLimit });
  logProblem(request.log, error, described, knownCodes);
  noteProblemCode(reply, described.code);
  const path = pathOf(request.url);
  const problem = toProblem(described, { instance: path, requestId: request.id });
  const format = errorFormatFor(formats, path);
  return reply
    .code(described.status)
    .headers({ ...described.headers, [REQUEST_ID_HEADER]: request.id })
    .type(format?.contentType ?? PROBLEM_CONTENT_TYPE)
    .send(format === undefined ? serializeProblem(problem) : format.body(problem));
}

/**
 * Root error and not-found handlers. Plugins may still set their own for their routes. With
 * `routeMethods`, a path served under other methods is 405 with `Allow` instead of 404.
 */
export function installErrorHandling(
  app: FastifyInstance,
  options: {
    knownCodes: ReadonlySet<string>;
    routeMethods?: RouteMethods;
    errorFormats?: readonly ErrorFormat[];
  },
): void {
  const formats = options.errorFormats;
  app.setErrorHandler((error, request, reply) =>
    sendProblem(error, request, reply, options.knownCodes, formats),
  );
  app.setNotFoundHandler((request, reply) => {
    const path = pathOf(request.url);
    const allow = options.routeMethods?.allowedFor(path) ?? [];
    if (allow.length > 0) {
      const detail = `${path} does not accept ${request.method}; it accepts ${allow.join(", ")}.`;
      reply.header("allow", allow.join(", "));
      return sendProblem(
        httpErrors.create("REQUEST_METHOD_NOT_ALLOWED", { detail, fields: { allow } }),
        request,
        reply,
        undefined,
        formats,
      );
    }
    const detail = `No route matches ${request.method} ${path}.`;
    const notFound = commonErrors.create("RESOURCE_NOT_FOUND", { detail });
    return sendProblem(notFound, request, reply, undefined, formats);
  });
}

/**
 * For Fastify's `frameworkErrors` option: bad URL encoding and the like, before any route runs;
 * answered in `formats` where a path has one.
 */
export function frameworkErrorHandlerWith(formats: readonly ErrorFormat[] | undefined) {
  return (error: Error, request: FastifyRequest, reply: FastifyReply): void => {
    sendProblem(error, request, reply, undefined, formats);
  };
}

function clientErrorCode(code: string | undefined): HttpErrorCode {
  if (code === "ERR_HTTP_REQUEST_TIMEOUT") return "REQUEST_TIMEOUT";
  if (code === "HPE_HEADER_OVERFLOW") return "REQUEST_HEADERS_TOO_LARGE";
  return "REQUEST_MALFORMED";
}

/**
 * For Fastify's `clientErrorHandler`: HTTP that could not be parsed, or a request
 * that did not arrive within `requestTimeout`. There is no request object, so
 * the response is written to the socket by hand, then the connection is closed.
 */
export function clientErrorHandler(log: Logger, newRequestId: () => string) {
  return (error: Error & { code?: string }, socket: Socket): void => {
    const response = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // A reset peer, a dead socket or a response already under way: nothing can be written.
    if (error.code === "ECONNRESET" || !socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const code = clientErrorCode(error.code);
    const spec = httpErrors.specs[code];
    const requestId = newRequestId();
    log.info({ requestId, code, cause: error.code }, "client error");
    const body = serializeProblem(
      toProblem(
        { status: spec.status, code, detail: spec.message, fields: {}, headers: {} },
        { instance: "", requestId },
      ),
    );
    socket.end(
      [
        `HTTP/1.1 ${spec.status} ${STATUS_CODES[spec.status]}`,
        `Content-Type: ${PROBLEM_CONTENT_TYPE}`,
        `Content-Length: ${Buffer.byteLength(body)}`,
        `${REQUEST_ID_HEADER}: ${requestId}`,
        "Connection: close",
        "",
        body,
      ].join("\r\n"),
    );
  };
}

/**
 * RFC 9457 problem details: what any thrown value becomes on the wire. Pure
 * functions, no Fastify: `describeError` decides status, code, detail and headers;
 * `toProblem` adds the request context; `serializeProblem` never throws.
 *
 * A CasebookError's `fields` become extension members of the problem (so a
 * REQUEST_INVALID thrown by a handler with `fields.errors` looks exactly like a
 * schema validation failure); the reserved members cannot be overwritten by them.
 *
 * @example
 * const parts = describeError(commonErrors.create("SERVICE_UNAVAILABLE", { fields: { retryAfterMs: 1500 } }));
 * parts.headers; // { "retry-after": "2" }
 * serializeProblem(toProblem(parts, { instance: "/v1/things", requestId: "r-1" }));
 */
import { CasebookError, commonErrors } from "@casebook/kit/errors";
import { httpErrors } from "./http-errors.ts";

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

/** Field errors reported per response: a validator that returns thousands must not make a huge body. */
export const maxFieldErrors = 20;

export interface FieldError {
  /** JSON pointer into the request: `/body/cost`, `/querystring/limit`, `/params/id`. */
  field: string;
  message: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: string;
  requestId: string;
  [extension: string]: unknown;
}

/** What a thrown value means for the response, before the request context is added. */
export interface ProblemParts {
  status: number;
  code: string;
  detail: string;
  /** Extension members (RFC 9457 §3.2): context a client can act on, never secrets. */
  fields: Record<string, unknown>;
  /** Extra response headers, lower-case names (`retry-after`). */
  headers: Record<string, string>;
}

const RESERVED_MEMBERS = new Set(["type", "title", "status", "detail", "instance", "code", "requestId"]);

/** A stable URI per code (RFC 9457 §3.1.1): a URN, because no page documents each code yet. */
export function problemType(code: string): string {
  return `urn:casebook:problem:${code.toLowerCase().replaceAll("_", "-")}`;
}

/** A short summary that never changes between occurrences of one code: `REQUEST_INVALID` → `Request invalid`. */
export function problemTitle(code: string): string {
  const words = code.toLowerCase().replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Retry-After carries whole seconds (RFC 9110 §10.2.3); round up so a client never retries early. */
export function retryAfterSeconds(retryAfterMs: number): number {
  return Math.max(0, Math.ceil(retryAfterMs / 1000));
}

/** The shape Fastify gives a schema validation failure (ajv errors plus the request part). */
interface ValidationFailure {
  validation: ReadonlyArray<{ instancePath?: string; keyword?: string; params?: unknown; message?: string }>;
  validationContext?: string;
}

function isValidationFailure(error: unknown): error is ValidationFailure {
  return (
    typeof error === "object" && error !== null && Array.isArray((error as ValidationFailure).validation)
  );
}

/** One JSON pointer segment (RFC 6901 §3): `~` → `~0`, `/` → `~1`. */
export function escapePointer(segment: string): string {
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * ajv errors → `{ field, message }` naming the field at fault. `required` and
 * `additionalProperties` errors point at the parent object, so the missing or
 * unexpected property is appended to make the pointer name the field itself.
 */
export function fieldErrors(failure: ValidationFailure): FieldError[] {
  const part = failure.validationContext ?? "body";
  return failure.validation.slice(0, maxFieldErrors).map((issue) => {
    const params = (issue.params ?? {}) as Record<string, unknown>;
    let pointer = issue.instancePath ?? "";
    if (issue.keyword === "required" && typeof params.missingProperty === "string") {
      pointer += `/${escapePointer(params.missingProperty)}`;
    } else if (issue.keyword === "additionalProperties" && typeof params.additionalProperty === "string") {
      pointer += `/${escapePointer(params.additionalProperty)}`;
    }
    return { field: `/${part}${pointer}`, message: issue.message ?? "is invalid" };
  });
}

function parts(
  status: number,
  code: string,
  detail: string,
  fields: Record<string, unknown> = {},
): ProblemParts {
  return { status, code, detail, fields, headers: {} };
}

function fromCasebookError(error: CasebookError): ProblemParts {
  const described = parts(error.status, error.code, error.message, error.fields);
  const retryAfterMs = error.fields.retryAfterMs;
  if (typeof retryAfterMs === "number" && Number.isFinite(retryAfterMs)) {
    described.headers["retry-after"] = String(retryAfterSeconds(retryAfterMs));
  }
  return described;
}

/** Fastify's own error codes (lib/errors.js) that mean "the client sent something wrong". */
const fastifyClientErrors: Record<string, (message: string) => ProblemParts> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () =>
    parts(413, "REQUEST_TOO_LARGE", commonErrors.specs.REQUEST_TOO_LARGE.message),
  FST_ERR_CTP_INVALID_JSON_BODY: (message) => parts(400, "REQUEST_MALFORMED", message),
  FST_ERR_CTP_EMPTY_JSON_BODY: (message) => parts(400, "REQUEST_MALFORMED", message),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: (message) => parts(400, "REQUEST_MALFORMED", message),
  FST_ERR_BAD_URL: (message) => parts(400, "REQUEST_MALFORMED", message),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    parts(415, "REQUEST_MEDIA_TYPE_UNSUPPORTED", httpErrors.specs.REQUEST_MEDIA_TYPE_UNSUPPORTED.message),
};

/**
 * Decides what the client sees for `error`. Only errors meant for clients keep
 * their message: a CasebookError (its detail was written for the user), Fastify's
 * 4xx errors, and other 4xx errors (plugins). Anything else is a 500 whose
 * message stays in the logs, because it may carry SQL, paths or secrets.
 */
export function describeError(error: unknown, context: { bodyLimitBytes?: number } = {}): ProblemParts {
  if (error instanceof CasebookError) return fromCasebookError(error);
  if (isValidationFailure(error)) {
    return parts(400, "REQUEST_INVALID", commonErrors.specs.REQUEST_INVALID.message, {
      errors: fieldErrors(error),
    });
  }
  const { code, statusCode, message } = (error ?? {}) as {
    code?: unknown;
    statusCode?: unknown;
    message?: unknown;
  };
  const text = typeof message === "string" ? message : "";
  const known = typeof code === "string" ? fastifyClientErrors[code] : undefined;
  if (known) {
    const described = known(text);
    if (described.code === "REQUEST_TOO_LARGE" && context.bodyLimitBytes !== undefined) {
      described.fields = { limitBytes: context.bodyLimitBytes };
    }
    return described;
  }
  if (typeof statusCode === "number" && statusCode >= 400 && statusCode < 500) {
    return parts(statusCode, "REQUEST_REJECTED", text || httpErrors.specs.REQUEST_REJECTED.message);
  }
  return parts(500, "INTERNAL_ERROR", commonErrors.specs.INTERNAL_ERROR.message);
}

/** Adds the request context; extension fields never replace the reserved members. */
export function toProblem(
  described: ProblemParts,
  request: { instance: string; requestId: string },
): Problem {
  const problem: Problem = {
    type: problemType(described.code),
    title: problemTitle(described.code),
    status: described.status,
    detail: described.detail,
    instance: request.instance,
    code: described.code,
    requestId: request.requestId,
  };
  for (const [key, value] of Object.entries(described.fields)) {
    if (!RESERVED_MEMBERS.has(key)) problem[key] = value;
  }
  return problem;
}

function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

/** JSON text of the problem; drops extension members that cannot be serialized (cycles) rather than throw. */
export function serializeProblem(problem: Problem): string {
  try {
    return JSON.stringify(problem, jsonSafe);
  } catch {
    const { type, title, status, detail, instance, code, requestId } = problem;
    return JSON.stringify({ type, title, status, detail, instance, code, requestId });
  }
}

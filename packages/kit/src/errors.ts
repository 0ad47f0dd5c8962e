/**
 * Typed errors with stable codes. Each package (and each system) defines ONE
 * registry of `AREA_WHAT` codes, each with its HTTP status and a message that tells
 * the user what to do; the HTTP layer maps them to RFC 9457 problem+json.
 *
 * @example
 * const errors = defineErrors({
 *   WEBHOOK_SUBSCRIPTION_NOT_FOUND: { status: 404, message: "No subscription with this id for your tenant." },
 * });
 * throw errors.create("WEBHOOK_SUBSCRIPTION_NOT_FOUND", { fields: { id } });
 */
export interface ErrorSpec {
  /** HTTP status the API answers with. */
  status: number;
  /** What went wrong and what to do about it, for the person reading the response. */
  message: string;
}

export interface ErrorOptions {
  /** Context as fields: shown in the problem+json body (never put secrets here). */
  fields?: Record<string, unknown>;
  /** Overrides the registry message with a more specific one. */
  detail?: string;
  cause?: unknown;
}

const CODE_PATTERN = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/;

export class CasebookError extends Error {
  readonly code: string;
  readonly status: number;
  readonly fields: Record<string, unknown>;

  constructor(code: string, spec: ErrorSpec, options: ErrorOptions = {}) {
    super(options.detail ?? spec.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CasebookError";
    this.code = code;
    this.status = spec.status;
    this.fields = options.fields ?? {};
  }
}

export interface ErrorRegistry<Code extends string> {
  readonly specs: Readonly<Record<Code, ErrorSpec>>;
  create(code: Code, options?: ErrorOptions): CasebookError;
  /** True when `error` is a CasebookError with this code (or any code of the registry when omitted). */
  is(error: unknown, code?: Code): error is CasebookError;
}

/** Builds a registry; throws at definition time on a malformed code or status. */
export function defineErrors<Code extends string>(specs: Record<Code, ErrorSpec>): ErrorRegistry<Code> {
  for (const [code, spec] of Object.entries<ErrorSpec>(specs)) {
    if (!CODE_PATTERN.test(code)) throw new TypeError(`error code ${code} must look like AREA_WHAT`);
    if (!Number.isInteger(spec.status) || spec.status < 400 || spec.status > 599) {
      throw new TypeError(`error ${code} has status ${spec.status}; use a 4xx or 5xx status`);
    }
    if (spec.message.trim() === "") throw new TypeError(`error ${code} needs a message`);
  }
  const frozen = Object.freeze({ ...specs });
  return {
    specs: frozen,
    create: (code, options) => new CasebookError(code, frozen[code], options),
    is: (error, code): error is CasebookError =>
      error instanceof CasebookError && (code === undefined ? error.code in frozen : error.code === code),
  };
}

/** Errors any package may raise; the HTTP layer uses these for validation and limits. */
export const commonErrors = defineErrors({
  REQUEST_INVALID: { status: 400, message: "The request is invalid; see `errors` for the field at fault." },
  REQUEST_TOO_LARGE: { status: 413, message: "The request body is larger than this endpoint accepts." },
  AUTH_MISSING: { status: 401, message: "Send credentials: `Authorization: Bearer <api key>`." },
  AUTH_INVALID: { status: 401, message: "The API key is not valid." },
  RESOURCE_NOT_FOUND: { status: 404, message: "Nothing exists at this path." },
  SERVICE_UNAVAILABLE: { status: 503, message: "A dependency is unavailable; retry after the given delay." },
  INTERNAL_ERROR: {
    status: 500,
    message: "Something broke on our side; the request id identifies it in the logs.",
  },
});

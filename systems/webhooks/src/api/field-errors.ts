/**
 * One shape for "this field is wrong", whoever found it. Schema validation answers
 * REQUEST_INVALID with `errors: [{ field: "/body/url", message }]`; the store and the URL
 * policy throw their own typed codes (WEBHOOK_SUBSCRIPTION_INVALID with `field: "eventTypes"`,
 * WEBHOOK_URL_FORBIDDEN with `host`, …). `atField` keeps each code (a client may branch on
 * it) and adds the same `errors` pointer list, so a client reads the field at fault the
 * same way in every 4xx.
 *
 * @example
 * try { validateEndpointUrl(body.url, policy); } catch (err) { throw atField(err, "/body/url"); }
 * // problem+json: { code: "WEBHOOK_URL_FORBIDDEN", host: "127.0.0.1", errors: [{ field: "/body/url", … }] }
 */
import { CasebookError } from "@casebook/kit/errors";

export interface FieldError {
  /** JSON pointer into the request: `/body/url`, `/headers/idempotency-key`. */
  field: string;
  message: string;
}

/** Store codes that name the field at fault in `fields.field`. */
const NAMED_FIELD_CODES = new Set([
  "WEBHOOK_TENANT_INVALID",
  "WEBHOOK_EVENT_INVALID",
  "WEBHOOK_SUBSCRIPTION_INVALID",
]);
/** Store codes about one input that they do not name: a cursor error names its listing instead. */
const IMPLIED_FIELD: Readonly<Record<string, string>> = {
  WEBHOOK_CURSOR_INVALID: "cursor",
  WEBHOOK_EVENT_TOO_LARGE: "payload",
};

/** `error` with `errors: [{ field: pointer, message }]` added; anything but a 4xx CasebookError passes through. */
export function atField(error: unknown, pointer: string): unknown {
  if (!(error instanceof CasebookError) || error.status >= 500 || "errors" in error.fields) return error;
  const errors: FieldError[] = [{ field: pointer, message: error.message }];
  return new CasebookError(
    error.code,
    { status: error.status, message: error.message },
    { fields: { ...error.fields, errors }, cause: error },
  );
}

/**
 * A store error that names its field (`fields.field: "eventTypes"`) gets the pointer
 * `${part}/<field>`; others pass through unchanged.
 *
 * @example
 * catch (err) { throw pointAtNamedField(err, "/body"); }
 */
export function pointAtNamedField(error: unknown, part: string): unknown {
  if (!(error instanceof CasebookError)) return error;
  const named = NAMED_FIELD_CODES.has(error.code) ? error.fields.field : IMPLIED_FIELD[error.code];
  return typeof named === "string" ? atField(error, `${part}/${named}`) : error;
}

/**
 * Runs `write` and rewrites its field errors to point into `part` of the request.
 *
 * @example
 * const created = await withFieldPointers("/body", () => createSubscription(db, tenantId, input, ctx));
 */
export async function withFieldPointers<T>(part: string, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    throw pointAtNamedField(error, part);
  }
}

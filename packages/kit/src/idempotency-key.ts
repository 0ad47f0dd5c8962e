/**
 * The one Idempotency-Key rule of every Casebook API: 1 to 255 visible ASCII characters
 * (0x21–0x7E), Stripe's bound. No spaces or control characters, so a proxy that trims or
 * folds whitespace cannot turn one key into two, and a key is safe in a log line. A UUID
 * (36) fits with room for a client's prefix.
 *
 * This file is the rule; `@casebook/infra/http/idempotency-key` is its header schema and the
 * 400 a route answers for a bad key; a store checks keys it is handed with `idempotencyKeyProblem`.
 *
 * @example
 * isIdempotencyKey("3f1c2a8e-6b1d-4c55-9d1e-2f3a4b5c6d7e"); // true
 * idempotencyKeyProblem("has space");                     // "must be 1 to 255 visible ASCII characters (0x21-0x7E)"
 */

/** Stripe's bound. */
export const IDEMPOTENCY_KEY_MAX_CHARS = 255;
/** The rule as a JSON-schema / ECMAScript pattern source (ajv compiles it with the `u` flag). */
export const IDEMPOTENCY_KEY_PATTERN = `^[\\x21-\\x7e]{1,${IDEMPOTENCY_KEY_MAX_CHARS}}$`;
/** What a client is told when its key breaks the rule. */
export const IDEMPOTENCY_KEY_RULE = `must be 1 to ${IDEMPOTENCY_KEY_MAX_CHARS} visible ASCII characters (0x21-0x7E)`;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** True when `raw` is a valid Idempotency-Key. */
export function isIdempotencyKey(raw: unknown): raw is string {
  return idempotencyKeyProblem(raw) === undefined;
}

/**
 * Why `raw` is not a valid key ("missing", "longer than 255", or the rule), undefined when it is.
 *
 * @example
 * idempotencyKeyProblem("k".repeat(256)); // "longer than 255"
 */
export function idempotencyKeyProblem(raw: unknown): string | undefined {
  if (typeof raw !== "string" || raw.length === 0) return "missing";
  // The length first: the regex never runs on an oversized value.
  if (raw.length > IDEMPOTENCY_KEY_MAX_CHARS) return `longer than ${IDEMPOTENCY_KEY_MAX_CHARS}`;
  return VISIBLE_ASCII.test(raw) ? undefined : IDEMPOTENCY_KEY_RULE;
}

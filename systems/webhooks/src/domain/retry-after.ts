/**
 * `Retry-After` (RFC 9110 §10.2.3) as a bounded wait: delta-seconds or an HTTP-date.
 * A receiver that says "come back in a week" must not park a delivery past its own
 * deadline or pin a scheduler slot, so the value is clamped to `maxMs`; a malformed
 * value is ignored (the backoff applies), a date in the past means "now".
 *
 * @example
 * retryAfterMs("120", now, 3_600_000);                           // 120_000
 * retryAfterMs("Wed, 21 Oct 2015 07:28:00 GMT", now, 3_600_000); // ms until then, at most one hour
 * retryAfterMs("soon", now, 3_600_000);                          // undefined
 */

/** Default bound on an honoured Retry-After: one hour. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 3_600_000;

const DELTA_SECONDS = /^\d{1,10}$/;
// IMF-fixdate, plus the two obsolete forms RFC 9110 says recipients must accept.
const HTTP_DATE =
  /^(?:[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT|[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT|[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4})$/;

/** The wait a Retry-After value asks for, in ms within [0, maxMs], or undefined when malformed. */
export function retryAfterMs(
  value: string | undefined,
  nowMs: number,
  maxMs = DEFAULT_MAX_RETRY_AFTER_MS,
): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  let waitMs: number;
  if (DELTA_SECONDS.test(text)) waitMs = Number(text) * 1_000;
  else if (HTTP_DATE.test(text)) {
    const atMs = Date.parse(/GMT$/.test(text) ? text : `${text} GMT`);
    if (!Number.isFinite(atMs)) return undefined;
    waitMs = atMs - nowMs;
  } else return undefined;
  return Math.min(maxMs, Math.max(0, waitMs));
}

/**
 * Whether a value is a promise (or any thenable) — for an API that takes a plain value or a
 * promise of one and does the work in the same turn when it can (a cache hit), or that must
 * refuse a promise where only a plain value will do.
 *
 * @example
 * const verified = verify(key); // a value, or a promise of one
 * if (isThenable(verified)) verified.then(admit, fail);
 * else admit(verified);
 */
export function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

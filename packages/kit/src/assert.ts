/**
 * One way to state an invariant: `assert(condition, message)`. A failed assertion is a
 * bug in our code, never bad input from a user (validate input with typed `AREA_WHAT`
 * errors instead), so it throws `AssertionError` — a `CasebookError` with code
 * `ASSERTION_FAILED` and status 500 — and TypeScript narrows on it (`asserts condition`).
 * Assert where an invariant can break: before a write and after a read (TIGER_STYLE).
 *
 * The message is a plain string, built even when the assertion holds: keep it a literal
 * (or put the numbers in `fields`) on hot paths.
 *
 * @example
 * import { assert } from "@casebook/kit/assert";
 * assert(tokens >= 0, "a bucket never holds a negative number of tokens", { tokens });
 * assert(node !== undefined, "a parked entry names a known node"); // node: narrowed to defined
 */
import { CasebookError } from "./errors.ts";
import { kitErrors } from "./kit-errors.ts";

/** Thrown by `assert`: a broken invariant, i.e. a bug. `fields` carries the values at fault. */
export class AssertionError extends CasebookError {
  constructor(message: string, fields: Record<string, unknown> = {}) {
    super("ASSERTION_FAILED", kitErrors.specs.ASSERTION_FAILED, {
      detail: `assertion failed: ${message}`,
      fields,
    });
    this.name = "AssertionError";
  }
}

/** Throws `AssertionError` with `message` (what should have held) unless `condition` is truthy. */
export function assert(
  condition: unknown,
  message: string,
  fields?: Record<string, unknown>,
): asserts condition {
  if (!condition) throw new AssertionError(message, fields);
}
